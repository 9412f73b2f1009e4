from typing import Any


def __getattr__(name: str) -> Any:
    # The installed version is looked up on first use: importlib.metadata costs every
    # console script a few tens of milliseconds at start, and most never ask for it.
    if name == "__version__":
        from importlib.metadata import version

        globals()["__version__"] = version("agent-benchmarks")
        return globals()["__version__"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
