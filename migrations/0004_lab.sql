-- Laboratory testing (src/lab/). Portable SQL, like 0001-0003: runs unchanged on SQLite and
-- PostgreSQL; ids are TEXT uuids, instants RFC 3339 UTC strings with microseconds (they sort as
-- text), dates YYYY-MM-DD.

-- A team's lab tests. `sandbox_method` is set on the four tests every team starts with (one per
-- collection method) and makes their creation idempotent; NULL for the team's own tests.
CREATE TABLE lab_tests (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams (id),
    name            TEXT NOT NULL,
    description     TEXT NOT NULL,
    method          TEXT NOT NULL,
    lab_id          BIGINT NOT NULL,
    fasting         BIGINT NOT NULL,
    status          TEXT NOT NULL,
    marker_ids      TEXT NOT NULL,
    sandbox_method  TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (team_id, sandbox_method)
);

CREATE INDEX lab_tests_by_team ON lab_tests (team_id, created_at, id);

-- Orders. `document` is the order as GET /v3/order/{id} renders it; the other columns copy
-- what the list filters and sorts on, so GET /v3/orders never parses a document it skips.
-- patient_name: lowercase "first last"; search_text: lowercase patient name, recipient name
-- and date of birth, for search_input.
CREATE TABLE lab_orders (
    id               TEXT PRIMARY KEY,
    team_id          TEXT NOT NULL REFERENCES teams (id),
    user_id          TEXT NOT NULL,
    method           TEXT NOT NULL,
    status           TEXT NOT NULL,
    patient_name     TEXT NOT NULL,
    recipient_name   TEXT NOT NULL,
    search_text      TEXT NOT NULL,
    activation_type  TEXT NOT NULL,
    interpretation   TEXT,
    is_critical      BIGINT NOT NULL,
    transaction_id   TEXT NOT NULL,
    document         TEXT NOT NULL,
    results          TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);

-- One index per sort key (team first, id last so pages are stable), and the selective filters.
CREATE INDEX lab_orders_by_created ON lab_orders (team_id, created_at, id);
CREATE INDEX lab_orders_by_patient ON lab_orders (team_id, patient_name, id);
CREATE INDEX lab_orders_by_status ON lab_orders (team_id, status, created_at, id);
CREATE INDEX lab_orders_by_updated ON lab_orders (team_id, updated_at);
CREATE INDEX lab_orders_by_user ON lab_orders (team_id, user_id, created_at);
CREATE INDEX lab_orders_by_method ON lab_orders (team_id, method, created_at, id);
-- Counting a page's total under the common pair of filters (method and status) reads this
-- index alone.
CREATE INDEX lab_orders_by_method_status ON lab_orders (team_id, method, status);

-- X-Idempotency-Key of POST /v3/order: the first answer per (team, key), replayed for 24 h.
-- status NULL while the first request is still running (a duplicate then answers 409).
CREATE TABLE lab_idempotency (
    team_id       TEXT NOT NULL REFERENCES teams (id),
    idem_key      TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    status        BIGINT,
    body          TEXT,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    PRIMARY KEY (team_id, idem_key)
);

-- Booking keys handed out by the availability endpoints: single-use (used_at), bound to the
-- appointment type and team, expiring one hour before the slot. `slot` is the slot's JSON
-- (start, end, price, site, ...).
CREATE TABLE lab_booking_keys (
    booking_key  TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL REFERENCES teams (id),
    kind         TEXT NOT NULL,
    slot         TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT,
    created_at   TEXT NOT NULL
);

-- Appointments; `document` is the appointment as rendered. At most one per order is not
-- cancelled (enforced in code: booking answers 400 while one is active).
-- confirm_at: when the (sandbox) provider confirms, NULL if it never will; fails: whether its
-- answer is a failure; deadline: when an asynchronous wait gives up.
CREATE TABLE lab_appointments (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL REFERENCES teams (id),
    order_id    TEXT NOT NULL REFERENCES lab_orders (id),
    status      TEXT NOT NULL,
    document    TEXT NOT NULL,
    confirm_at  TEXT,
    fails       BIGINT NOT NULL,
    deadline    TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE INDEX lab_appointments_by_order ON lab_appointments (order_id, created_at);

-- Patient service centres imported with `wearhouse lab import-pscs FILE.csv`; a lab with rows
-- here uses them instead of its sandbox network.
CREATE TABLE lab_pscs (
    lab_slug      TEXT NOT NULL,
    site_code     TEXT NOT NULL,
    name          TEXT NOT NULL,
    first_line    TEXT NOT NULL,
    city          TEXT NOT NULL,
    state         TEXT NOT NULL,
    zip_code      TEXT NOT NULL,
    lat           DOUBLE PRECISION NOT NULL,
    lng           DOUBLE PRECISION NOT NULL,
    phone_number  TEXT,
    capabilities  TEXT NOT NULL,
    imported_at   TEXT NOT NULL,
    PRIMARY KEY (lab_slug, site_code)
);
