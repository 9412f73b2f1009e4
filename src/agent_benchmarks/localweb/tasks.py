"""The localweb suite: tasks on the bundled site, each with a postcondition contract.

Every fact a task asks for comes from :mod:`agent_benchmarks.localweb.site.data`, so the
site and the contracts cannot drift apart. A task's question names the page to start
from and the exact answer format; its contract is checked against the answer and, for
tasks that change state, against the site's own record of the episode.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from agent_benchmarks.localweb.site import LocalSite, data
from agent_benchmarks.records.schema import Task
from agent_benchmarks.scoring.contracts import (
    AnswerContains,
    AnswerIs,
    CartHolds,
    Contract,
    FormArrived,
    FormSeen,
    OrderPlaced,
    OrderSeen,
    Requested,
    RequestSeen,
    SettingIs,
    SiteRecord,
)

INSPECTION = "Inspection"
NAVIGATION = "Ecommerce navigation"
INTERACTION = "Interaction"
LOGGED_IN = "Logged in"
GROUPS = (INSPECTION, NAVIGATION, INTERACTION, LOGGED_IN)
# Where a logged-in task's question holds the account's password: the run puts its own in
# (localweb/session.py), so the task's text, contracts and digest never hold one.
PASSWORD_SLOT = "{password}"
CREDENTIALS = f"username {data.ACCOUNT_USERNAME}, password `{PASSWORD_SLOT}`"


@dataclass(frozen=True)
class LocalwebTask:
    id: str
    group: str
    start_path: str
    question: str
    gold: str  # the canonical answer, shown in reports; the contract decides
    contract: Contract


def _product(name: str) -> data.Product:
    return data.product_by_name(name)


_GLACIER = _product("Glacier Water Bottle")
_KESTREL = _product("Kestrel Binoculars")
_MUG = _product("Dune Ceramic Mug")
_INFUSER = _product("Fjord Tea Infuser")
_TURNTABLE = _product("Xenon Turntable")
_AUDIO = [p for p in data.PRODUCTS if p.category == "Audio"]
_OUTDOOR_CHEAPEST = min(
    (p for p in data.PRODUCTS if p.category == "Outdoor"), key=lambda p: p.price_cents
)
_OUT_OF_STOCK = next(p for p in data.PRODUCTS if p.stock == 0)
_HOME_LINKS = (
    "Catalogue",
    "Products",
    "Today's deal",
    "Documentation",
    "Member offers",
    "Wholesale enquiry",
    "Cart",
)
_ENQUIRY = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "topic": "bulk-order",
    "quantity": 12,
}
_CONFIRMATION = data.confirmation_number(**_ENQUIRY)
_CART_TOTAL_CENTS = _MUG.price_cents + _INFUSER.price_cents
_CART_TOTAL = f"${_CART_TOTAL_CENTS // 100}.{_CART_TOTAL_CENTS % 100:02d}"
_PAST_ORDER = data.ACCOUNT_ORDERS[1]  # the member's order asked about
_PAST_ORDER_CENTS = data.order_total_cents(_PAST_ORDER[2])
_PAST_ORDER_TOTAL = f"${_PAST_ORDER_CENTS // 100}.{_PAST_ORDER_CENTS % 100:02d}"
_MEMBER_ORDER = ((_MUG.sku, 1),)
_MEMBER_ORDER_NUMBER = data.member_order_number(data.ACCOUNT_USERNAME, _MEMBER_ORDER)


def _answer(*accepted: str) -> AnswerIs:
    return AnswerIs(tuple(accepted))


TASKS: tuple[LocalwebTask, ...] = (
    # --- Inspection: read what is on a page, however it gets there ----------------------------
    LocalwebTask(
        "home-links",
        INSPECTION,
        "/",
        "List the main interactive elements of the home page: the link text of every link in "
        "its page list. Answer with the link texts separated by commas.",
        ", ".join(_HOME_LINKS),
        Contract((AnswerContains(_HOME_LINKS),)),
    ),
    LocalwebTask(
        "status-errors",
        INSPECTION,
        "/status",
        "Open the System status page and report the errors after it loads: the console error "
        "code (like LW-E000) and the HTTP status of each failing request. Answer as "
        "'CODE; STATUS; STATUS'.",
        f"{data.CONSOLE_ERROR.split(':')[0]}; 500; 404",
        Contract((AnswerContains((data.CONSOLE_ERROR.split(":")[0], "500", "404")),)),
    ),
    LocalwebTask(
        "catalogue-price",
        INSPECTION,
        "/catalogue",
        f"In the catalogue table, what is the price of SKU {_TURNTABLE.sku}? "
        "Answer with the price only, like $12.34.",
        _TURNTABLE.price,
        Contract((_answer(_TURNTABLE.price),)),
    ),
    LocalwebTask(
        "catalogue-count",
        INSPECTION,
        "/catalogue",
        "How many products in the catalogue table are in the Audio category? "
        "Answer with a number only.",
        str(len(_AUDIO)),
        Contract((_answer(str(len(_AUDIO))),)),
    ),
    LocalwebTask(
        "deal-price",
        INSPECTION,
        "/deal",
        "What is today's deal price? It is rendered by JavaScript after the page loads. "
        "Answer with the price only, like $12.34.",
        data.DEAL_PRICE,
        Contract((_answer(data.DEAL_PRICE),)),
    ),
    LocalwebTask(
        "deal-stock",
        INSPECTION,
        "/deal",
        "How many units of today's deal are left? Answer with a number only.",
        str(data.PRODUCTS_BY_SKU[data.DEAL_SKU].stock),
        Contract((_answer(str(data.PRODUCTS_BY_SKU[data.DEAL_SKU].stock)),)),
    ),
    LocalwebTask(
        "delayed-restock",
        INSPECTION,
        "/delayed",
        "On the Restock news page, on what date is the next restock? The news appears a "
        "moment after the page loads. Answer with the date only, like 1 January 2030.",
        "14 March 2027",
        Contract((_answer("14 March 2027"),)),
    ),
    LocalwebTask(
        "shadow-battery",
        INSPECTION,
        "/specs",
        "On the Headphone specs page, what battery life is stated? Answer like '10 hours'.",
        "38 hours",
        Contract((_answer("38 hours"),)),
    ),
    LocalwebTask(
        "iframe-pickup",
        INSPECTION,
        "/warehouse",
        "On the Warehouse pickup page, which dock is the pickup point? Answer like 'Dock 1'.",
        "Dock 14",
        Contract((_answer("Dock 14"),)),
    ),
    LocalwebTask(
        "docs-timeout",
        INSPECTION,
        "/docs",
        "In the documentation's Configuration page, what is the default request timeout? "
        "Answer like '10 seconds'.",
        "45 seconds",
        Contract((_answer("45 seconds"),)),
    ),
    LocalwebTask(
        "docs-install",
        INSPECTION,
        "/docs/install",
        "What command does the documentation's Installation page give to set up shopctl? "
        "Answer with the command only.",
        data.DOCS_FACTS["install"],
        Contract((_answer(data.DOCS_FACTS["install"]),)),
    ),
    # --- Ecommerce navigation: find things across pages --------------------------------------
    LocalwebTask(
        "find-product",
        NAVIGATION,
        "/",
        f"Find the {_GLACIER.name} in the shop. Answer with its price and the path of its "
        "product page, as 'PRICE PATH' (like '$1.00 /t/x/products/lw-0000').",
        f"{_GLACIER.price} /products/{_GLACIER.slug}",
        Contract(
            (
                AnswerContains((_GLACIER.price, f"/products/{_GLACIER.slug}")),
                Requested("GET", f"/products/{_GLACIER.slug}", 200),
            )
        ),
    ),
    LocalwebTask(
        "pagination-item",
        NAVIGATION,
        "/products",
        f"Follow the product list's pages until you find the {_GLACIER.name}. On which page "
        "number is it listed? Answer with a number only.",
        str(data.product_page(_GLACIER.sku)),
        Contract(
            (
                _answer(str(data.product_page(_GLACIER.sku))),
                Requested("GET", f"/products?page={data.product_page(_GLACIER.sku)}", 200),
            )
        ),
    ),
    LocalwebTask(
        "product-warranty",
        NAVIGATION,
        "/products",
        f"Open the product page of the {_KESTREL.name}. How long is its warranty? "
        "Answer like '12 months'.",
        f"{_KESTREL.warranty_months} months",
        Contract(
            (
                _answer(f"{_KESTREL.warranty_months} months"),
                Requested("GET", f"/products/{_KESTREL.slug}", 200),
            )
        ),
    ),
    LocalwebTask(
        "out-of-stock",
        NAVIGATION,
        "/catalogue",
        "Which Kitchen product is out of stock? Check the product pages. Answer with the "
        "product name only.",
        _OUT_OF_STOCK.name,
        Contract((_answer(_OUT_OF_STOCK.name),)),
    ),
    LocalwebTask(
        "cheapest-outdoor",
        NAVIGATION,
        "/catalogue",
        "Which Outdoor product is the cheapest? Answer with the product name only.",
        _OUTDOOR_CHEAPEST.name,
        Contract((_answer(_OUTDOOR_CHEAPEST.name),)),
    ),
    # --- Interaction: change state; the server's record decides ------------------------------
    LocalwebTask(
        "cookie-offer",
        INTERACTION,
        "/offers",
        "On the Member offers page, accept the cookie banner and read the offer it hides. "
        "Answer with the member code only.",
        data.OFFER_CODE,
        Contract((_answer(data.OFFER_CODE), Requested("POST", "/api/consent"))),
    ),
    LocalwebTask(
        "add-to-cart",
        INTERACTION,
        f"/products/{_KESTREL.slug}",
        f"Add one {_KESTREL.name} to the cart, then report the cart counter shown in the "
        "page header. Answer with a number only.",
        "1",
        Contract((_answer("1"), CartHolds(_KESTREL.sku, 1))),
    ),
    LocalwebTask(
        "cart-total",
        INTERACTION,
        "/products",
        f"Add one {_MUG.name} and one {_INFUSER.name} to the cart, then report the cart "
        "total shown on the Cart page. Answer with the amount only, like $12.34.",
        _CART_TOTAL,
        Contract((_answer(_CART_TOTAL), CartHolds(_MUG.sku, 1), CartHolds(_INFUSER.sku, 1))),
    ),
    LocalwebTask(
        "enquiry-submit",
        INTERACTION,
        "/enquiry",
        "Fill in and submit the Wholesale enquiry form: name Ada Lovelace, email "
        "ada@example.com, topic Bulk order, quantity 12, no newsletter, terms accepted. "
        "Answer with the confirmation number shown after submitting.",
        _CONFIRMATION,
        Contract((_answer(_CONFIRMATION), FormArrived(tuple(_ENQUIRY.items())))),
    ),
    LocalwebTask(
        "docs-returns",
        INTERACTION,
        "/docs",
        "In the documentation, navigate to the Returns policy page. Within how many days of "
        "delivery can items be returned? Answer like '10 days'.",
        "60 days",
        Contract((_answer("60 days"),)),
    ),
    # --- Logged in: the member account's pages; the server's own record decides ------------
    LocalwebTask(
        "account-orders",
        LOGGED_IN,
        "/account/orders",
        f"Sign in to your account on this shop ({CREDENTIALS}) and open your order history. "
        f"What was the total of order {_PAST_ORDER[0]}? Answer with the amount only, like "
        "$12.34.",
        _PAST_ORDER_TOTAL,
        Contract((_answer(_PAST_ORDER_TOTAL), Requested("GET", "/account/orders", 200))),
    ),
    LocalwebTask(
        "account-settings",
        LOGGED_IN,
        "/account/settings",
        f"Sign in to your account on this shop ({CREDENTIALS}), change your preferred "
        "delivery method to Parcel locker in your settings and save them. Then report the "
        "delivery method the settings page shows. Answer with the method only.",
        data.DELIVERY_METHODS["locker"],
        Contract((_answer(data.DELIVERY_METHODS["locker"]), SettingIs("delivery", "locker"))),
    ),
    LocalwebTask(
        "member-checkout",
        LOGGED_IN,
        f"/products/{_MUG.slug}",
        f"Add one {_MUG.name} to the cart, then sign in ({CREDENTIALS}) and check out as a "
        "member from your account's checkout page. Answer with the order number shown.",
        _MEMBER_ORDER_NUMBER,
        Contract(
            (_answer(_MEMBER_ORDER_NUMBER), OrderPlaced(_MEMBER_ORDER, data.ACCOUNT_USERNAME))
        ),
    ),
)

TASKS_BY_ID: dict[str, LocalwebTask] = {t.id: t for t in TASKS}


def contracts_digest() -> str:
    """A hash of every task's question and contract: runs compare only if it matches."""
    canon = [[t.id, t.group, t.start_path, t.question, t.contract.describe()] for t in TASKS]
    return hashlib.sha256(json.dumps(canon).encode()).hexdigest()


def as_tasks() -> list[Task]:
    """The suite as :class:`Task` records. ``start_url`` is the path under the task's own
    site prefix; the runner joins it to the live site's URL."""
    return [
        Task(
            suite="localweb",
            id=t.id,
            question=t.question,
            gold=t.gold,
            start_url=t.start_path,
            category=t.group,
        )
        for t in TASKS
    ]


def site_record(site: LocalSite, task_id: str) -> SiteRecord:
    """The site's own record of one task's episode, as the runner stores it in the row."""
    settings, orders = site.member_record(task_id)
    return SiteRecord(
        settings=settings,
        orders=[OrderSeen.model_validate(order) for order in orders],
        requests=[
            RequestSeen(method=r.method, path=r.path, status=r.status)
            for r in site.requests_for(task_id)
        ],
        cart=site.cart(task_id),
        forms=[
            FormSeen(fields=f.fields, confirmation=f.confirmation)
            for f in site.form_submissions(task_id)
        ],
    )
