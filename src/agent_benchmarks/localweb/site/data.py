"""Fixed content of the localweb site: products, docs pages and the facts tasks ask about.

Everything here is constant so that a task's gold answer can be written down once. Tests and
task files should import the facts from here rather than repeat them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

STORE_NAME = "Lakeside Goods"
PAGE_SIZE = 10  # products per page on /products?page=N


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    category: str
    price_cents: int
    stock: int
    warranty_months: int
    weight_g: int
    description: str

    @property
    def price(self) -> str:
        """Price as shown on the site, e.g. ``"$49.00"``."""
        return f"${self.price_cents // 100}.{self.price_cents % 100:02d}"

    @property
    def slug(self) -> str:
        return self.sku.lower()


_RAW: list[tuple[str, str, int, int, str]] = [
    # name, category, price in cents, stock, one-line description
    ("Alpine Coffee Grinder", "Kitchen", 4900, 12, "Conical burr grinder with 18 settings."),
    ("Birch Cutting Board", "Kitchen", 2250, 40, "End-grain birch, 40 x 30 cm."),
    ("Cobalt Chef Knife", "Kitchen", 6800, 9, "20 cm blade of cobalt steel."),
    ("Dune Ceramic Mug", "Kitchen", 1400, 120, "Stoneware mug holding 350 ml."),
    ("Ember Cast Iron Pan", "Kitchen", 5500, 15, "Pre-seasoned 26 cm skillet."),
    ("Fjord Tea Infuser", "Kitchen", 950, 64, "Fine stainless mesh basket."),
    ("Granite Mortar Set", "Kitchen", 3100, 0, "Polished granite with pestle."),
    ("Harbor Rain Jacket", "Outdoor", 8900, 22, "Three-layer shell with taped seams."),
    ("Ivy Trail Backpack", "Outdoor", 7400, 18, "28 litre daypack with rain cover."),
    ("Juniper Camp Stove", "Outdoor", 6150, 6, "Two-burner stove for gas canisters."),
    ("Kestrel Binoculars", "Outdoor", 12900, 4, "10x42 roof-prism binoculars."),
    ("Lumen Head Torch", "Outdoor", 2799, 51, "400 lumen rechargeable head torch."),
    ("Meadow Picnic Blanket", "Outdoor", 3600, 33, "Waterproof backing, 200 x 150 cm."),
    ("Nimbus Travel Pillow", "Outdoor", 1999, 70, "Memory-foam neck pillow."),
    ("Orbit Desk Lamp", "Office", 4450, 27, "Dimmable LED lamp with USB-C port."),
    ("Pine Notebook Set", "Office", 1250, 200, "Three dotted A5 notebooks."),
    ("Quartz Electric Kettle", "Kitchen", 3400, 7, "1.7 litre kettle with keep-warm."),
    ("Raven Monitor Stand", "Office", 5900, 11, "Walnut riser with a drawer."),
    ("Slate Desk Organizer", "Office", 2400, 45, "Five-compartment felt organizer."),
    ("Tundra Standing Mat", "Office", 6700, 8, "Anti-fatigue mat, 90 x 50 cm."),
    ("Umber Wireless Mouse", "Office", 3299, 60, "Silent clicks, 2.4 GHz and Bluetooth."),
    ("Vale Noise-Cancelling Headphones", "Audio", 19900, 5, "Over-ear, adaptive ANC."),
    ("Willow Bluetooth Speaker", "Audio", 8450, 14, "Splash-proof speaker, 20 W."),
    ("Xenon Turntable", "Audio", 24900, 3, "Belt-drive turntable with USB out."),
    ("Yarrow Earbuds", "Audio", 5900, 38, "True wireless earbuds with case."),
    ("Zephyr Desk Fan", "Office", 3950, 19, "Quiet 3-speed USB desk fan."),
    ("Aster Wall Clock", "Office", 2800, 25, "Silent sweep, 30 cm dial."),
    ("Glacier Water Bottle", "Outdoor", 2100, 88, "Keeps drinks cold for 26 hours."),
    ("Halcyon Soundbar", "Audio", 15900, 7, "2.1 soundbar with wireless sub."),
    ("Indigo Cable Kit", "Audio", 1599, 140, "Six braided audio cables."),
]

PRODUCTS: list[Product] = [
    Product(
        sku=f"LW-{1001 + i}",
        name=name,
        category=category,
        price_cents=price,
        stock=stock,
        warranty_months=12 + (i * 7) % 25,
        weight_g=150 + (i * 137) % 900,
        description=desc,
    )
    for i, (name, category, price, stock, desc) in enumerate(_RAW)
]
PRODUCTS_BY_SKU: dict[str, Product] = {p.sku: p for p in PRODUCTS}
PRODUCTS_BY_SLUG: dict[str, Product] = {p.slug: p for p in PRODUCTS}


def product_by_name(name: str) -> Product:
    for p in PRODUCTS:
        if p.name == name:
            return p
    raise KeyError(name)


def product_page(sku: str) -> int:
    """Which /products?page=N lists this product (1-based)."""
    index = next(i for i, p in enumerate(PRODUCTS) if p.sku == sku)
    return index // PAGE_SIZE + 1


PAGE_COUNT = (len(PRODUCTS) + PAGE_SIZE - 1) // PAGE_SIZE

# --- /deal: rendered by JavaScript from /api/deal (fetch) and /api/stock/<sku> (XHR) ---
DEAL_SKU = "LW-1017"  # Quartz Electric Kettle, stock 7
DEAL_PRICE = "$24.50"
DEAL_CODE = "DEAL-KETTLE-24"

# --- /delayed: inserted by setTimeout after DELAYED_MS ---
DELAYED_MS = 1200
DELAYED_TEXT = "Next restock: 14 March 2027, 120 units of Harbor Rain Jacket."

# --- /offers: only shown after the cookie banner is accepted (server checks the cookie) ---
OFFER_CODE = "MEMBER-4821"
OFFER_TEXT = f"Members save 15% with code {OFFER_CODE} until 31 December 2027."

# --- /warehouse: text inside a same-origin iframe (/frame/warehouse) ---
IFRAME_TEXT = "Pickup point: Dock 14, North Warehouse. Open 07:00 to 19:00."

# --- /specs: text inside an open shadow root of <lw-spec-card> ---
SHADOW_SKU = "LW-1022"  # Vale Noise-Cancelling Headphones
SHADOW_TEXT = "Battery life: 38 hours with noise cancelling on."

# --- /status: console error and failing requests ---
CONSOLE_ERROR = "LW-E042: inventory service unavailable"
FAILING_PATH_500 = "/api/inventory"
FAILING_PATH_404 = "/api/legacy-report"
INCIDENT_ID = "INC-2291"

# --- /docs: client-side routed (history.pushState); content lives in static/docs.js ---
DOCS_PAGES: dict[str, str] = {
    "": "Overview",
    "install": "Installation",
    "configuration": "Configuration",
    "returns": "Returns policy",
    "faq": "FAQ",
}
DOCS_FACTS: dict[str, str] = {
    "install": "shopctl setup --channel stable",
    "configuration": "The default request timeout is 45 seconds.",
    "returns": "Items can be returned within 60 days of delivery.",
    "faq": "Support is open 09:00 to 17:00 UTC, Monday to Friday.",
}

# --- /enquiry: the form ---
ENQUIRY_TOPICS: dict[str, str] = {
    "bulk-order": "Bulk order",
    "returns": "Returns",
    "partnership": "Partnership",
}
QUANTITY_MIN, QUANTITY_MAX = 1, 50
FORM_ERRORS = {
    "name": "Name is required.",
    "email": "Email address is invalid.",
    "topic": "Please choose a topic.",
    "quantity": f"Quantity must be a whole number between {QUANTITY_MIN} and {QUANTITY_MAX}.",
    "terms": "You must accept the terms.",
}


def confirmation_number(
    name: str, email: str, topic: str, quantity: int | str, newsletter: bool = False
) -> str:
    """The confirmation number the enquiry form shows, derived only from the content."""
    canon = "|".join(
        [name.strip(), email.strip().lower(), topic, str(int(quantity)), "1" if newsletter else "0"]
    )
    digest = hashlib.sha256(canon.encode("utf-8")).hexdigest()
    return f"LW-{int(digest[:12], 16) % 10**8:08d}"


# --- /account: the site's one member account (localweb/site/account.py) ---
ACCOUNT_USERNAME = "ada"
ACCOUNT_PASSWORD = "engine-1843"
ACCOUNT_NAME = "Ada Lovelace"
ACCOUNT_POINTS = 250  # loyalty points, on the profile page
ACCOUNT_MEMBER_SINCE = "12 March 2024"
WRONG_LOGIN = "Wrong username or password."
