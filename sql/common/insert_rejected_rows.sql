-- `rejected_rows` is a frame registered by tasks.quarantine.quarantine_rows.
insert into quarantine.rejected_rows
(dataset, source_file, source_line, failed_check, raw_values, content_sha256, quarantined_at)
select
    $dataset as dataset,
    source_file,
    source_line,
    failed_check,
    raw_values::json,
    content_sha256,
    $quarantined_at as quarantined_at
from rejected_rows
