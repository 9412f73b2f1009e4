"""What a signed-in member does in the account area (logged-in episodes), beside the sign-in
of :mod:`.account`:

    GET  /account/orders     the member's order history (#orders: number, date, items,
                             total, status)
    GET  /account/settings   the settings form (#delivery, #newsletter, hidden csrf),
                             the settings as saved (#current-delivery, #current-newsletter),
                             and after saving, #saved
    POST /account/settings   right token: the settings saved (303 back, ?saved=1);
                             a stale token: 403, nothing saved
    GET  /account/checkout   the visitor's cart at member prices, #place-order (csrf)
    POST /account/checkout   right token and a cart: an order placed for the member, the
                             cart emptied, 303 to /account/checkout/done?o=NUMBER
    GET  /account/checkout/done   #order-confirmation with #order-number

Every page here is members only (a visitor not signed in, or whose session expired, is sent
to the sign-in form and brought back). What a member saves or orders is in the task's
state (:class:`.account.AccountState`), where the episode's site record reads it.
"""

from __future__ import annotations

import hmac
from html import escape

from . import data
from .account import AccountRequest, AccountSession, Reply, csrf_token, login_url, signed_in
from .pages import Page, money

PATHS = ("/account/orders", "/account/settings", "/account/checkout", "/account/checkout/done")


def route(request: AccountRequest, path: str) -> Reply:
    session = signed_in(request)
    if session is None:
        return Reply(303, headers=[("Location", login_url(request, path))])
    page = request.page()
    if request.method == "POST" and path in ("/account/settings", "/account/checkout"):
        form = request.form()  # the body, read once
        if not hmac.compare_digest(
            form.get("csrf", ""), csrf_token(request.task_id, request.session)
        ):
            body = '<h1>Form expired</h1>\n<p id="form-error" class="errors">Reload the page.</p>'
            return Reply(403, page.layout("Form expired", body))
        if path == "/account/settings":
            return _save_settings(request, form)
        return _place_order(request, session)
    if path == "/account/orders":
        return Reply(200, page.layout("Your orders", _orders()))
    if path == "/account/settings":
        return Reply(200, page.layout("Settings", _settings(request)))
    if path == "/account/checkout":
        return Reply(200, page.layout("Member checkout", _checkout(request)))
    return _confirmation(request, page)


def _items(items: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{qty} x {data.PRODUCTS_BY_SKU[sku].name}" for sku, qty in items)


def _orders() -> str:
    rows = "".join(
        f"<tr><td>{number}</td><td>{date}</td><td>{escape(_items(items))}</td>"
        f"<td>{money(data.order_total_cents(items))}</td><td>{status}</td></tr>\n"
        for number, date, items, status in data.ACCOUNT_ORDERS
    )
    return (
        '<h1>Your orders</h1>\n<table id="orders">\n'
        "<tr><th>Order</th><th>Date</th><th>Items</th><th>Total</th><th>Status</th></tr>\n"
        f"{rows}</table>"
    )


def _settings(request: AccountRequest) -> str:
    saved = request.accounts().settings
    options = "".join(
        f'<option value="{value}"{" selected" if value == saved["delivery"] else ""}>'
        f"{label}</option>"
        for value, label in data.DELIVERY_METHODS.items()
    )
    checked = " checked" if saved["newsletter"] == "yes" else ""
    notice = '<p id="saved" role="status">Settings saved.</p>\n' if request.param("saved") else ""
    token = csrf_token(request.task_id, request.session)
    return (
        f"<h1>Settings</h1>\n{notice}"
        f'<p>Delivery method: <span id="current-delivery">'
        f"{data.DELIVERY_METHODS[saved['delivery']]}</span></p>\n"
        f'<p>Newsletter: <span id="current-newsletter">{saved["newsletter"]}</span></p>\n'
        f'<form id="settings-form" method="post" action="{request.root}/account/settings">\n'
        f'<input type="hidden" name="csrf" value="{token}">\n'
        f'<p><label for="delivery">Preferred delivery</label> '
        f'<select id="delivery" name="delivery">{options}</select></p>\n'
        f'<p><label><input type="checkbox" id="newsletter" name="newsletter" value="yes"'
        f"{checked}> Newsletter</label></p>\n"
        '<p><button type="submit" id="save-settings">Save settings</button></p>\n</form>'
    )


def _save_settings(request: AccountRequest, form: dict[str, str]) -> Reply:
    delivery = form.get("delivery", "")
    state = request.accounts()
    with state.lock:
        if delivery in data.DELIVERY_METHODS:
            state.settings["delivery"] = delivery
        state.settings["newsletter"] = "yes" if form.get("newsletter") else "no"
    return Reply(303, headers=[("Location", f"{request.root}/account/settings?saved=1")])


def _cart_items(request: AccountRequest) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(request.cart().items()))


def _checkout(request: AccountRequest) -> str:
    items = _cart_items(request)
    if not items:
        return '<h1>Member checkout</h1>\n<p id="empty-cart">Your cart is empty.</p>'
    token = csrf_token(request.task_id, request.session)
    return (
        "<h1>Member checkout</h1>\n"
        f'<p id="checkout-items">{escape(_items(items))}</p>\n'
        f"<p>Member price ({data.MEMBER_DISCOUNT_PERCENT}% off): "
        f'<span id="checkout-total">{money(data.order_total_cents(items, member=True))}'
        "</span></p>\n"
        f'<form id="checkout-form" method="post" action="{request.root}/account/checkout">\n'
        f'<input type="hidden" name="csrf" value="{token}">\n'
        '<button type="submit" id="place-order">Place order</button>\n</form>'
    )


def _place_order(request: AccountRequest, session: AccountSession) -> Reply:
    items = _cart_items(request)
    if not items:
        return Reply(409, request.page().layout("Member checkout", _checkout(request)))
    number = data.member_order_number(session.username, items)
    state = request.accounts()
    order = {
        "number": number,
        "member": session.username,
        "items": dict(items),
        "total": money(data.order_total_cents(items, member=True)),
    }
    with state.lock:
        state.orders.append(order)
    request.clear_cart()
    return Reply(303, headers=[("Location", f"{request.root}/account/checkout/done?o={number}")])


def _confirmation(request: AccountRequest, page: Page) -> Reply:
    number = request.param("o") or ""
    state = request.accounts()
    with state.lock:
        order = next((o for o in state.orders if o["number"] == number), None)
    if order is None:
        return Reply(404, page.not_found("No such order."))
    body = (
        '<h1>Thank you</h1>\n<section id="order-confirmation">\n'
        f'<p>Order number: <span id="order-number">{order["number"]}</span></p>\n'
        f'<p>Total charged: <span id="order-total">{order["total"]}</span></p>\n</section>'
    )
    return Reply(200, page.layout("Order placed", body))
