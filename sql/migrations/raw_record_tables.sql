-- The JSON record tables of warehouses made before the landing zone (raw.price_records, raw.telemetry_records),
-- when they are still there: tasks/ingest/landing.py::land_raw_record_tables moves them out, once.
select table_name
from duckdb_tables()
where schema_name = 'raw' and table_name in ('price_records', 'telemetry_records')
order by table_name
