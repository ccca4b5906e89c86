"""The sample database served when no ``--db`` is given: a small shop, realistic enough to explore.

Tables ``categories``, ``products``, ``customers``, ``orders`` and ``order_items`` (foreign keys between
them, indexes on the usual lookups) and a view ``order_totals``; about 90,000 rows. The content is
generated from a fixed seed, so every machine gets the same database; it is built in a temporary file
and renamed into place, so a crash never leaves half a database behind.
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
from datetime import date, timedelta
from pathlib import Path

__all__ = ["ensure_demo_database"]

SCHEMA = """
CREATE TABLE categories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    category_id INTEGER NOT NULL REFERENCES categories(id),
    name TEXT NOT NULL,
    price_cents INTEGER NOT NULL CHECK (price_cents > 0),
    in_stock INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    signed_up TEXT NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    ordered_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'placed' CHECK (status IN ('placed', 'shipped', 'delivered', 'cancelled'))
);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, product_id)
) WITHOUT ROWID;
CREATE INDEX products_by_category ON products(category_id);
CREATE INDEX orders_by_customer ON orders(customer_id);
CREATE INDEX orders_by_date ON orders(ordered_at);
CREATE INDEX order_items_by_product ON order_items(product_id);
CREATE VIEW order_totals AS
    SELECT o.id AS order_id, o.customer_id, o.ordered_at, o.status,
           SUM(i.quantity * i.unit_price_cents) AS total_cents, COUNT(*) AS items
    FROM orders o JOIN order_items i ON i.order_id = o.id
    GROUP BY o.id;
"""

CATEGORIES = ["Books", "Music", "Garden", "Kitchen", "Toys", "Sports", "Office", "Outdoors", "Tools", "Games"]
ADJECTIVES = [
    "Classic",
    "Compact",
    "Deluxe",
    "Eco",
    "Handmade",
    "Smart",
    "Sturdy",
    "Travel",
    "Vintage",
    "Wireless",
]
NOUNS = [
    "Lamp",
    "Notebook",
    "Kettle",
    "Backpack",
    "Puzzle",
    "Racket",
    "Planter",
    "Speaker",
    "Drill",
    "Chess Set",
]
FIRST = [
    "Ana",
    "Ben",
    "Chloé",
    "Dmitri",
    "Emeka",
    "Fatima",
    "Giulia",
    "Hiro",
    "Ines",
    "Jonas",
    "Kwame",
    "Lena",
]
LAST = ["Silva", "Müller", "Okafor", "Tanaka", "Rossi", "Dubois", "Novak", "Haddad", "Kim", "García", "Berg"]
COUNTRIES = ["BR", "DE", "NG", "JP", "IT", "FR", "CZ", "LB", "KR", "ES", "SE", "US", "GB", "IN"]
STATUSES = ["placed", "shipped", "delivered", "delivered", "delivered", "cancelled"]

CUSTOMERS, PRODUCTS, ORDERS = 5_000, 500, 25_000


def _fill(connection: sqlite3.Connection) -> None:
    rng = random.Random(20261123)
    connection.executemany("INSERT INTO categories(id, name) VALUES (?, ?)", enumerate(CATEGORIES, 1))
    products = [
        (
            i,
            rng.randint(1, len(CATEGORIES)),
            f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {i}",
            rng.randint(199, 49_999),
            int(rng.random() > 0.1),
        )
        for i in range(1, PRODUCTS + 1)
    ]
    connection.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?)", products)
    start = date(2022, 1, 1)
    customers = []
    for i in range(1, CUSTOMERS + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        signed_up = start + timedelta(days=rng.randint(0, 1000))
        customers.append(
            (
                i,
                f"{first} {last}",
                f"{first}.{last}.{i}@example.com".lower(),
                rng.choice(COUNTRIES),
                signed_up.isoformat(),
            )
        )
    connection.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", customers)
    prices = {p[0]: p[3] for p in products}
    orders, items = [], []
    for order_id in range(1, ORDERS + 1):
        when = start + timedelta(days=rng.randint(0, 1400), seconds=rng.randint(0, 86_399))
        orders.append((order_id, rng.randint(1, CUSTOMERS), when.isoformat(), rng.choice(STATUSES)))
        for product_id in rng.sample(range(1, PRODUCTS + 1), rng.randint(1, 5)):
            items.append((order_id, product_id, rng.randint(1, 4), prices[product_id]))
    connection.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", orders)
    connection.executemany("INSERT INTO order_items VALUES (?, ?, ?, ?)", items)


def ensure_demo_database(path: Path) -> Path:
    """Create the sample database at ``path`` unless it is already there; return ``path``."""
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".demo-", suffix=".db", dir=path.parent)
    os.close(handle)
    try:
        connection = sqlite3.connect(temporary)
        try:
            connection.executescript(SCHEMA)
            with connection:
                _fill(connection)
            connection.execute("ANALYZE")
        finally:
            connection.close()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
