-- The staged rows of one file that failed a check, with the record as read (tasks/ingest/quarantine.py).
insert into quarantine.rejected_rows
    (dataset, source_file, source_line, failed_check, raw_values, content_sha256, quarantined_at)
select
    $dataset,
    $source_file,
    staged.source_line,
    failures.failed_check,
    staged.raw_values::json,
    $sha,
    $quarantined_at
from staging.file_rows as staged
inner join staging.file_failures as failures on staged._row_id = failures._row_id
order by staged._row_id
