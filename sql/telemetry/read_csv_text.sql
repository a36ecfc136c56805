-- A telemetry CSV file, every column as text, in file order (tasks/telemetry/readers.py::read_into_duckdb).
-- Fixed dialect (comma, double quotes); a ragged row is an error (the reader then falls back).
create or replace temp table staging_telemetry_file as
select *
from read_csv(
        $path, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"',
        strict_mode = true, null_padding = false
    )
