"""HTML rendering for the localweb site: package templates plus a few server-built pages."""

from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib import resources
from string import Template

from . import data

_STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


@cache
def _template(name: str) -> Template:
    text = resources.files(__package__).joinpath("templates", name).read_text("utf-8")
    return Template(text)


@cache
def static_file(name: str) -> tuple[bytes, str] | None:
    """(body, content type) of a file under static/, or None if there is no such file."""
    if "/" in name or name.startswith("."):
        return None
    suffix = name[name.rfind(".") :] if "." in name else ""
    ctype = _STATIC_TYPES.get(suffix)
    if ctype is None:
        return None
    ref = resources.files(__package__).joinpath("static", name)
    if not ref.is_file():
        return None
    return ref.read_bytes(), ctype


def fragment(template: str, /, **values: object) -> str:
    return _template(template).substitute({k: str(v) for k, v in values.items()})


class Page:
    """Per-request rendering context: URL prefix of the task, header cart count, fault knobs."""

    def __init__(self, root: str, cart_count: int, late_modal_ms: int | None) -> None:
        self.root = root
        self.cart_count = cart_count
        self.late_modal_ms = late_modal_ms

    def layout(self, title: str, content: str, scripts: tuple[str, ...] = ()) -> str:
        attrs = ""
        if self.late_modal_ms is not None:
            attrs = f' data-late-modal-ms="{int(self.late_modal_ms)}"'
        tags = "\n".join(f'<script src="{self.root}/static/{s}"></script>' for s in scripts)
        return fragment(
            "base.html",
            root=self.root,
            html_attrs=attrs,
            title=escape(title),
            cart_count=self.cart_count,
            content=content,
            scripts=tags,
        )

    # --- static-ish pages -------------------------------------------------------------
    def home(self) -> str:
        return self.layout("Home", fragment("home.html", root=self.root))

    def deal(self) -> str:
        return self.layout("Today's deal", fragment("deal.html"), ("deal.js",))

    def delayed(self) -> str:
        body = fragment("delayed.html", delay_ms=data.DELAYED_MS)
        return self.layout("Restock news", body, ("delayed.js",))

    def docs(self) -> str:
        return self.layout("Docs", fragment("docs.html", root=self.root), ("docs.js",))

    def offers(self) -> str:
        return self.layout("Member offers", fragment("offers.html"), ("offers.js",))

    def warehouse(self) -> str:
        return self.layout("Warehouse pickup", fragment("warehouse.html", root=self.root))

    def frame_warehouse(self) -> str:
        return fragment("frame_warehouse.html", text=escape(data.IFRAME_TEXT))

    def specs(self) -> str:
        p = data.PRODUCTS_BY_SKU[data.SHADOW_SKU]
        body = fragment("specs.html", name=escape(p.name), spec=escape(data.SHADOW_TEXT))
        return self.layout("Headphone specs", body, ("specs.js",))

    def status(self) -> str:
        body = fragment(
            "status.html",
            incident=data.INCIDENT_ID,
            console_error=escape(data.CONSOLE_ERROR),
            path_500=data.FAILING_PATH_500,
            path_404=data.FAILING_PATH_404,
        )
        return self.layout("System status", body, ("status.js",))

    def allocate(self, mb: int, hold_ms: int) -> str:
        """A page that allocates ``mb`` MiB in the browser (every page of it written, so it
        is resident) and keeps it until the page goes; its load is held ``hold_ms`` by a
        script the server answers late, so a sampler sees the memory (the resource
        figures' own test page: it is no task's)."""
        body = fragment("allocate.html", mb=mb, root=self.root, hold_ms=hold_ms)
        return self.layout("Allocation", body)

    def not_found(self, what: str = "This page does not exist.") -> str:
        return self.layout("Not found", f"<h1>Page not found</h1>\n<p>{escape(what)}</p>")

    def error(self, status: int, message: str) -> str:
        return self.layout(
            f"Error {status}", f"<h1>Error {status}</h1>\n<p id='error'>{escape(message)}</p>"
        )

    # --- server-built pages -----------------------------------------------------------
    def catalogue(self) -> str:
        rows = "\n".join(
            f"<tr><td>{p.sku}</td><td>{escape(p.name)}</td><td>{p.category}</td>"
            f"<td>{p.price}</td></tr>"
            for p in data.PRODUCTS
        )
        body = (
            "<h1>Catalogue</h1>\n"
            f"<p>All {len(data.PRODUCTS)} products, prices in US dollars.</p>\n"
            '<table id="catalogue">\n<caption>Product catalogue</caption>\n'
            "<thead><tr><th>SKU</th><th>Name</th><th>Category</th><th>Price</th></tr></thead>\n"
            f"<tbody>\n{rows}\n</tbody>\n</table>"
        )
        return self.layout("Catalogue", body)

    def products(self, page: int) -> str:
        start = (page - 1) * data.PAGE_SIZE
        items = data.PRODUCTS[start : start + data.PAGE_SIZE]
        lis = "\n".join(
            f'<li><a href="{self.root}/products/{p.slug}">{escape(p.name)}</a> ({p.category})</li>'
            for p in items
        )
        nav = []
        if page > 1:
            prev = f"{self.root}/products?page={page - 1}"
            nav.append(f'<a rel="prev" href="{prev}">Previous page</a>')
        nav.append(f"<span id='page-indicator'>Page {page} of {data.PAGE_COUNT}</span>")
        if page < data.PAGE_COUNT:
            nav.append(f'<a rel="next" href="{self.root}/products?page={page + 1}">Next page</a>')
        body = (
            "<h1>Products</h1>\n"
            f'<ol id="product-list" start="{start + 1}">\n{lis}\n</ol>\n'
            f'<nav aria-label="Pagination" id="pagination">{" | ".join(nav)}</nav>'
        )
        return self.layout(f"Products, page {page}", body)

    def product(self, p: data.Product, added: bool) -> str:
        stock = f"{p.stock} in stock" if p.stock else "Out of stock"
        notice = '<p class="notice" id="added-notice">Added to your cart.</p>\n' if added else ""
        disabled = "" if p.stock else " disabled"
        back = data.product_page(p.sku)
        body = (
            f"<h1>{escape(p.name)}</h1>\n{notice}"
            f"<p>{escape(p.description)}</p>\n"
            '<dl id="product-facts">\n'
            f"<dt>SKU</dt><dd id='sku'>{p.sku}</dd>\n"
            f"<dt>Price</dt><dd id='price'>{p.price}</dd>\n"
            f"<dt>Category</dt><dd>{p.category}</dd>\n"
            f"<dt>Availability</dt><dd id='stock'>{stock}</dd>\n"
            f"<dt>Warranty</dt><dd id='warranty'>{p.warranty_months} months</dd>\n"
            f"<dt>Weight</dt><dd id='weight'>{p.weight_g} g</dd>\n"
            "</dl>\n"
            f'<form id="add-to-cart" method="post" action="{self.root}/cart/add">\n'
            f'<input type="hidden" name="sku" value="{p.sku}">\n'
            f'<input type="hidden" name="next" value="{self.root}/products/{p.slug}?added=1">\n'
            '<label for="qty">Quantity</label> '
            '<input id="qty" type="number" name="qty" value="1" min="1" max="99">\n'
            f'<button type="submit" id="add-button"{disabled}>Add to cart</button>\n'
            "</form>\n"
            f'<p><a href="{self.root}/products?page={back}">Back to products page {back}</a></p>'
        )
        return self.layout(p.name, body)

    def cart(self, items: dict[str, int]) -> str:
        if not items:
            listing = '<p id="cart-empty">Your cart is empty.</p>'
        else:
            rows = "\n".join(
                f"<tr><td>{sku}</td><td>{escape(data.PRODUCTS_BY_SKU[sku].name)}</td>"
                f"<td>{qty}</td><td>{money(data.PRODUCTS_BY_SKU[sku].price_cents * qty)}</td></tr>"
                for sku, qty in items.items()
            )
            listing = (
                '<table id="cart-items"><thead><tr><th>SKU</th><th>Name</th><th>Quantity</th>'
                f"<th>Line total</th></tr></thead>\n<tbody>\n{rows}\n</tbody></table>\n"
                f'<p>Total: <strong id="cart-total">{money(cart_total_cents(items))}</strong></p>\n'
                f'<form method="post" action="{self.root}/cart/clear">'
                '<button type="submit" id="clear-cart">Empty cart</button></form>'
            )
        return self.layout("Cart", f"<h1>Your cart</h1>\n{listing}")

    def enquiry(self, values: dict[str, str] | None = None, errors: list[str] | None = None) -> str:
        v = values or {}

        def val(key: str) -> str:
            return escape(v.get(key, ""), quote=True)

        options = ['<option value="">Choose a topic…</option>'] + [
            f'<option value="{key}"{" selected" if v.get("topic") == key else ""}>{label}</option>'
            for key, label in data.ENQUIRY_TOPICS.items()
        ]
        server_errors = ""
        if errors:
            lis = "".join(f"<li>{escape(e)}</li>" for e in errors)
            server_errors = (
                '<div class="errors" role="alert"><p>Please fix the following:</p>'
                f'<ul id="server-errors">{lis}</ul></div>\n'
            )
        messages = escape(json.dumps(data.FORM_ERRORS), quote=True)
        checked_news = " checked" if v.get("newsletter") else ""
        checked_terms = " checked" if v.get("terms") else ""
        body = (
            "<h1>Wholesale enquiry</h1>\n"
            "<p>Ask about bulk orders, returns or partnerships. All fields except the "
            "newsletter are required.</p>\n"
            f"{server_errors}"
            '<ul id="form-errors" class="errors" role="alert"></ul>\n'
            f'<form id="enquiry-form" method="post" action="{self.root}/enquiry" novalidate '
            f'data-messages="{messages}" data-qmin="{data.QUANTITY_MIN}" '
            f'data-qmax="{data.QUANTITY_MAX}">\n'
            '<p><label for="name">Name</label> '
            f'<input id="name" name="name" type="text" value="{val("name")}"></p>\n'
            '<p><label for="email">Email</label> '
            f'<input id="email" name="email" type="email" value="{val("email")}"></p>\n'
            '<p><label for="topic">Topic</label> '
            f'<select id="topic" name="topic">{"".join(options)}</select></p>\n'
            '<p><label for="quantity">Quantity</label> '
            f'<input id="quantity" name="quantity" type="number" value="{val("quantity")}"></p>\n'
            '<p><input id="newsletter" name="newsletter" type="checkbox" value="yes"'
            f"{checked_news}>"
            ' <label for="newsletter">Send me the newsletter</label></p>\n'
            f'<p><input id="terms" name="terms" type="checkbox" value="yes"{checked_terms}>'
            ' <label for="terms">I accept the terms of sale</label></p>\n'
            '<p><button type="submit" id="submit-enquiry">Send enquiry</button></p>\n'
            "</form>"
        )
        return self.layout("Wholesale enquiry", body, ("enquiry.js",))

    def enquiry_thanks(self, fields: dict[str, object], confirmation: str) -> str:
        topic = data.ENQUIRY_TOPICS.get(str(fields["topic"]), str(fields["topic"]))
        body = (
            "<h1>Thank you</h1>\n"
            f"<p>Thank you, {escape(str(fields['name']))}. Your enquiry about "
            f"{escape(topic)} (quantity {fields['quantity']}) was received.</p>\n"
            f'<p>Confirmation number: <strong id="confirmation">{confirmation}</strong></p>'
        )
        return self.layout("Enquiry received", body)


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def cart_total_cents(items: dict[str, int]) -> int:
    return sum(data.PRODUCTS_BY_SKU[sku].price_cents * qty for sku, qty in items.items())
