"""The one exception type user-facing commands turn into a clear message and exit 2."""


class InputError(Exception):
    """Bad input from the user: a flag, a dataset file, a predictions file.

    The message is shown as is, on one line, so it must name what is wrong and where.
    """

    exit_code = 2
