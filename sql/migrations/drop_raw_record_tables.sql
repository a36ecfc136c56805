-- The JSON record tables, once their records are in the landing zone (every core row keeps
-- (content_sha256, source_line) back to its unit's landed file).
drop table if exists raw.price_records;
drop table if exists raw.telemetry_records;
