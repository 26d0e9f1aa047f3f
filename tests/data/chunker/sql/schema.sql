-- Schema for the shop database.

CREATE TABLE users (
    id          SERIAL PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE orders (
    id          SERIAL PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'paid', 'shipped')),
    total_cents INTEGER NOT NULL CHECK (total_cents >= 0),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX orders_user_id_idx ON orders (user_id);

CREATE VIEW order_totals AS
SELECT u.id AS user_id,
       u.email,
       count(o.id) AS order_count,
       coalesce(sum(o.total_cents), 0) AS total_cents
FROM users u
LEFT JOIN orders o ON o.user_id = u.id
GROUP BY u.id, u.email;

INSERT INTO users (email, name) VALUES
    ('alice@example.com', 'Alice'),
    ('bob@example.com', 'Bob');

UPDATE orders SET status = 'paid' WHERE total_cents = 0;

-- Remove abandoned orders older than a month.
DELETE FROM orders
WHERE status = 'new' AND created_at < now() - interval '30 days';
