-- The staged price rows that passed the prices suite (staging_file_rows without staging_file_failures), with the
-- file's identity ($source_file, $sha, $ingested_at: the same on every row, so not staged). Read from the staged
-- table beneath staging_file_rows (staging_price_rows, sql/prices/checked_rows.sql): the stored columns are all
-- there, and the view's joins against history (the price move, medians, classes) would run once more per row.
insert into core.price_observations (
    provider, region, zone, instance_type, gpu, gpu_name, gpu_count, gpu_memory_gb, vcpus, memory_gb,
    pricing, usd_per_hour, usd_per_gpu_hour, currency, observed_at, source_file, source_line,
    content_sha256, ingested_at, electricity_usd_per_kwh, pue, term_hours, upfront_usd, recurring_usd_per_hour,
    purchase_option, offering_class
)
select
    provider, region, zone, instance_type, gpu, gpu_name, gpu_count, gpu_memory_gb, vcpus, memory_gb,
    pricing, usd_per_hour, usd_per_gpu_hour, currency, observed_at, $source_file as source_file, source_line,
    $sha as content_sha256,
    $ingested_at::timestamptz as ingested_at,
    electricity_usd_per_kwh,
    pue,
    term_hours,
    upfront_usd,
    recurring_usd_per_hour,
    purchase_option, offering_class
from staging_price_rows
anti join staging_file_failures using (_row_id)
where record_kind is distinct from 'storage'  -- storage volume prices: sql/prices/insert_storage_prices.sql
