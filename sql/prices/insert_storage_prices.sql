-- The storage volume prices of the file (record_kind 'storage': the AWS offer file's EBS volumes) that passed
-- their checks (staging_file_rows without staging_file_failures), with the file's identity ($source_file, $sha,
-- $ingested_at): the checkpoint storage of the cost model. Read from the staged table beneath staging_file_rows
-- (staging_price_rows, sql/prices/checked_rows.sql), as sql/prices/insert_observations.sql.
insert into core.storage_price_observations (
    provider, region, storage_type, usd_per_gb_month, observed_at, source_file, source_line, content_sha256,
    ingested_at
)
select
    provider, region, storage_type, usd_per_gb_month, observed_at, $source_file as source_file, source_line,
    $sha as content_sha256, $ingested_at::timestamptz as ingested_at
from staging_price_rows
anti join staging_file_failures using (_row_id)
where record_kind = 'storage'
