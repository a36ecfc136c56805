-- The spelling columns of the rejected runs (tasks/telemetry/ingest.py::unknown_spellings lists them).
select staged.unknown_precision, staged.unknown_workload, staged.unparsed_fields
from staging_file_rows as staged
inner join staging_file_failures as failures on staged._row_id = failures._row_id
where staged.unknown_precision is not null or staged.unknown_workload is not null
    or staged.unparsed_fields is not null
order by staged._row_id
