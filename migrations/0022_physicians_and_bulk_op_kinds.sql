-- The physicians a team has ordered under (GET /v2/team/{team_id}/physicians): one row per
-- (team, NPI), written with the order that first names the physician and renamed by a later
-- order naming the same NPI (src/store/metadata/lab/physicians.rs). Orders placed before this
-- migration are not read back into it.
CREATE TABLE lab_physicians (
    team_id     TEXT NOT NULL REFERENCES teams (id),
    npi         TEXT NOT NULL,
    first_name  TEXT NOT NULL,
    last_name   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (team_id, npi)
);

-- Bulk operations of every kind share bulk_import_ops and its recipes (src/link/bulk_ops):
-- `kind` is the operation's type as GET /v2/link/bulk_op names it (`link_bulk_import`,
-- `link_bulk_historical_trigger`); rows written before it are bulk imports.
ALTER TABLE bulk_import_ops ADD COLUMN kind TEXT NOT NULL DEFAULT 'link_bulk_import';
