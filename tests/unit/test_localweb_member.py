"""The member's side of the account area (site/member.py) over HTTP, for the logged-in
episodes: the order history, the settings form saved on the server (its CSRF token), the
member checkout that places an order from the visitor's cart; the run's own password; an
expiring session; the login wall and session-expiry faults; and the contracts that check
the server's record of it all."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_benchmarks.localweb.site import LocalSite, data
from agent_benchmarks.localweb.tasks import TASKS_BY_ID, site_record

PASSWORD = "run-own-secret-7"


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with LocalSite(account_password=PASSWORD, fault_script=True) as running:
        yield running


def token(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{32})"', page.text)
    assert found is not None, page.text[:500]
    return found.group(1)


def sign_in(client: httpx.Client, base: str, password: str = PASSWORD) -> httpx.Response:
    form = client.get(f"{base}/account/login")
    fields = {"csrf": token(form), "username": data.ACCOUNT_USERNAME, "password": password}
    return client.post(f"{base}/account/login", data=fields)


def test_the_run_s_own_password_signs_in_and_the_default_one_does_not(site: LocalSite) -> None:
    base = site.begin_task("m1").rstrip("/")
    with httpx.Client() as client:
        assert sign_in(client, base, data.ACCOUNT_PASSWORD).status_code == 401
        assert sign_in(client, base).status_code == 303


def test_the_order_history_is_members_only(site: LocalSite) -> None:
    base = site.begin_task("m1").rstrip("/")
    with httpx.Client() as client:
        away = client.get(f"{base}/account/orders")
        assert away.status_code == 303
        assert away.headers["location"] == "/t/m1/account/login?next=/t/m1/account/orders"
        sign_in(client, base)
        orders = client.get(f"{base}/account/orders")
        assert orders.status_code == 200 and 'id="orders"' in orders.text
        assert "<td>LW-ORD-2718</td><td>14 August 2026</td>" in orders.text
        assert "<td>$37.50</td>" in orders.text  # 2 mugs at $14.00 and an infuser at $9.50


def test_settings_are_saved_on_the_server_with_the_form_s_token_only(site: LocalSite) -> None:
    base = site.begin_task("m1").rstrip("/")
    with httpx.Client() as client:
        sign_in(client, base)
        form = client.get(f"{base}/account/settings")
        stale = client.post(f"{base}/account/settings", data={"csrf": "0" * 32, "delivery": "x"})
        assert stale.status_code == 403
        saved = client.post(
            f"{base}/account/settings",
            data={"csrf": token(form), "delivery": "locker"},
            follow_redirects=True,
        )
        assert 'id="saved"' in saved.text
        assert '<span id="current-delivery">Parcel locker</span>' in saved.text
    assert site.member_record("m1")[0] == {"delivery": "locker", "newsletter": "no"}
    record = site_record(site, "m1")
    contract = TASKS_BY_ID["account-settings"].contract
    results = contract.check("Parcel locker", record)
    assert [r.passed for r in results] == [True, True]
    # the answer alone does not do it: the server must hold the setting
    fresh = site_record(site, site.begin_task("m2").strip("/").rsplit("/", 1)[-1])
    assert [r.passed for r in contract.check("Parcel locker", fresh)] == [True, False]


def test_a_member_checkout_places_the_cart_as_an_order(site: LocalSite) -> None:
    base = site.begin_task("m1").rstrip("/")
    with httpx.Client() as client:
        client.post(f"{base}/cart/add", data={"sku": "LW-1004", "qty": "1"})
        sign_in(client, base)
        checkout = client.get(f"{base}/account/checkout")
        assert '<span id="checkout-total">$12.60</span>' in checkout.text  # 10% off $14.00
        done = client.post(
            f"{base}/account/checkout", data={"csrf": token(checkout)}, follow_redirects=True
        )
        number = data.member_order_number("ada", (("LW-1004", 1),))
        assert f'<span id="order-number">{number}</span>' in done.text
        assert site.cart("m1") == {}  # the cart became the order
        empty = client.get(f"{base}/account/checkout")
        assert 'id="empty-cart"' in empty.text
    contract = TASKS_BY_ID["member-checkout"].contract
    assert all(r.passed for r in contract.check(number, site_record(site, "m1")))


def test_a_session_expires_and_the_fault_ends_it_early(site: LocalSite) -> None:
    base = site.begin_task("m1").rstrip("/")
    with httpx.Client() as client:
        sign_in(client, base)
        assert client.get(f"{base}/account/orders").status_code == 200
        assert site.interrupt("m1", "session-expiry") == {"done": True, "sessions_ended": 1}
        again = client.get(f"{base}/account/orders")
        assert again.status_code == 303 and again.headers["location"].endswith("&expired=1")
        form = client.get(site.base_url + again.headers["location"])
        assert data.SESSION_EXPIRED in form.text
        sign_in(client, base)
        assert client.get(f"{base}/account/orders").status_code == 200
        # its own lifetime too: a sign-in older than ACCOUNT_SESSION_S has ended
        state = site._state("m1").accounts
        for cookie, session in list(state.sessions.items()):
            state.sessions[cookie] = type(session)(
                session.username, time.time() - data.ACCOUNT_SESSION_S - 1
            )
        assert client.get(f"{base}/account/orders").status_code == 303


def test_a_login_wall_sends_every_page_to_the_sign_in_form_until_signed_in(
    site: LocalSite,
) -> None:
    base = site.begin_task("m1").rstrip("/")
    site.interrupt("m1", "login-wall")
    with httpx.Client() as client:
        walled = client.get(f"{base}/products?page=2")
        assert walled.status_code == 303
        assert walled.headers["location"] == ("/t/m1/account/login?next=/t/m1/products%3Fpage%3D2")
        assert client.get(f"{base}/static/site.css").status_code == 200
        # a form sent from behind the wall does nothing, and comes back to its page
        added = client.post(
            f"{base}/cart/add",
            data={"sku": "LW-1004", "qty": "1"},
            headers={"Referer": f"{base}/products/lw-1004"},
        )
        assert added.status_code == 303
        assert added.headers["location"] == "/t/m1/account/login?next=/t/m1/products/lw-1004"
        assert site.cart("m1") == {}
        signed = sign_in(client, base)
        assert signed.status_code == 303
        assert client.get(f"{base}/products?page=2").status_code == 200
