"""The localweb site's side of an episode's fault (site/interrupt.py), over HTTP: the page
watch for a stale DOM (the generation, and the page saying it went stale, kept out of the
episode's record), the consent wall and its way through, a resource that fails or is slow
for the next N requests, the URL watch, and a run without --fault serving pages as before."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agent_benchmarks.localweb.site import LocalSite


@pytest.fixture
def site():
    with LocalSite(fault_script=True) as running:
        yield running


def test_pages_carry_the_dom_generation_only_in_a_faulted_run() -> None:
    with LocalSite() as plain:
        html = httpx.get(plain.begin_task("e1") + "catalogue").text
        assert "data-fault-generation" not in html
    with LocalSite(fault_script=True) as faulted:
        html = httpx.get(faulted.begin_task("e1") + "catalogue").text
        assert 'data-fault-generation="0"' in html


def test_a_stale_dom_fault_waits_for_the_page_to_say_it_replaced_its_nodes(
    site: LocalSite,
) -> None:
    root = site.begin_task("e1")
    control = root + "__fault/dom"
    assert httpx.get(control).json() == {"generation": 0}

    def page_goes_stale() -> None:  # what common.js does when it sees the new generation
        while httpx.get(control).json()["generation"] == 0:
            time.sleep(0.02)
        httpx.post(control + "?g=1")

    page = threading.Thread(target=page_goes_stale)
    page.start()
    assert site.interrupt("e1", "stale-dom", wait_s=5) == {"done": True, "generation": 1}
    page.join()
    # a page loaded now carries the new generation; no page is watching: the next one times out
    assert 'data-fault-generation="1"' in httpx.get(root).text
    missed = site.interrupt("e1", "stale-dom", wait_s=0.2)
    assert missed["done"] is False and "no open page" in missed["error"]
    # the harness's traffic with the page is not the episode's
    assert not any(r.path.startswith("/__fault/") for r in site.requests_for("e1"))


def test_a_consent_wall_stands_before_every_page_until_accepted(site: LocalSite) -> None:
    root = site.begin_task("e1")
    assert "consent-wall" not in httpx.get(root + "catalogue").text
    assert site.interrupt("e1", "consent-wall") == {"done": True, "path": "every request"}
    with httpx.Client() as browser:
        walled = browser.get(root + "products?page=2")
        assert walled.status_code == 200 and 'id="accept-wall"' in walled.text
        assert "Before you continue" in walled.text and "Glacier" not in walled.text
        # the page's own resources still load
        assert browser.get(root + "static/site.css").status_code == 200
        accepted = browser.post(
            root + "__fault/accept-wall",
            data={"next": "/t/e1/products?page=2"},
            follow_redirects=True,
        )
        assert accepted.url.path == "/t/e1/products" and "page=2" in str(accepted.url)
        assert "consent-wall" not in accepted.text
        # a next that leaves the task goes to its home instead
        away = browser.post(root + "__fault/accept-wall", data={"next": "https://elsewhere/"})
        assert away.headers["location"] == "/t/e1/"
    # another visitor (no cookie) still meets the wall; other episodes never did
    assert "accept-wall" in httpx.get(root + "deal").text
    assert "accept-wall" not in httpx.get(site.begin_task("e2") + "deal").text


def test_a_failing_resource_fails_the_next_n_matching_requests(site: LocalSite) -> None:
    root = site.begin_task("e1")
    site.interrupt("e1", "failing-resource", path="/api/*", count=2)
    assert httpx.get(root + "deal").status_code == 200  # not the fault's path
    assert [httpx.get(root + "api/deal").status_code for _ in range(3)] == [503, 503, 200]
    statuses = [(r.path, r.status) for r in site.requests_for("e1")]
    assert statuses[-3:] == [("/api/deal", 503), ("/api/deal", 503), ("/api/deal", 200)]


def test_a_slow_resource_delays_the_next_matching_response(site: LocalSite) -> None:
    root = site.begin_task("e1")
    site.interrupt("e1", "slow-resource", path="/deal", count=1, delay_s=0.6)
    started = time.monotonic()
    assert httpx.get(root + "deal").status_code == 200
    assert time.monotonic() - started >= 0.6
    started = time.monotonic()
    httpx.get(root + "deal")
    assert time.monotonic() - started < 0.6


def test_the_url_watch_sees_each_path_the_episode_loads(site: LocalSite) -> None:
    root = site.begin_task("e1")
    seen: list[str] = []
    site.watch("e1", seen.append)
    httpx.get(root + "cart")
    httpx.get(root + "products?page=3")
    httpx.get(site.begin_task("e2") + "cart")  # another episode's
    assert seen == ["/cart", "/products?page=3"]
