-- The staged rows of one file that failed a check, with the record as read (staging_file_records, by row key;
-- its raw_values are JSON text, or a STRUCT cast to JSON here, for these rows only).
insert into quarantine.rejected_rows
(dataset, source_file, source_line, failed_check, raw_values, content_sha256, quarantined_at)
select
    $dataset as dataset,
    $source_file as source_file,
    staged.source_line,
    failures.failed_check,
    records.raw_values::json,
    $sha as content_sha256,
    $quarantined_at as quarantined_at
from staging_file_failures as failures
inner join staging_file_rows as staged on failures._row_id = staged._row_id
left join staging_file_records as records on failures._row_id = records._row_id
order by failures._row_id
