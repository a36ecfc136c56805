-- Adapter records -> the normalised price shape: canonical GPU, commitments' effective hourly price, price per
-- GPU-hour, file identity.
-- The per-GPU price is computed here and nowhere else, and GPU names that one alias cannot settle (the same
-- 'A100' string on a 40 GB PCIe and a 40 GB SXM part) are settled here, once, by instance type
-- (data/reference/gpu_instance_overrides.csv: the first matching pattern, whole name, wins).
-- Relations (registered by tasks/prices/ingest.py): `file_records` (the adapter's columns, row key _row_id),
-- `price_aliases` (alias, gpu), `instance_overrides` (override_order, provider, instance_type_pattern, gpu,
-- gpu_count). Parameter: $ingested_at (dates an observation the file does not date).
-- The result is the file's staged rows (the rows the prices suite validates), in no particular order. The file's
-- identity (source file, content hash, ingest time), the same on every row, is added where rows are stored
-- (sql/prices/insert_observations.sql), not carried by every staged row (at 10^6 catalog rows, 1.9 M rows of about
-- 130 bytes: a third of the staged table, which then spilled past the ingest's memory cap).
create or replace temp table staging_file_rows as
with records as not materialized (
    -- the record as read stays in file_records; read where it is used (materialised, the 1.9 M records of a 10^6-row
    -- catalog were stored once more for the two uses below, and spilled)
    select * exclude (raw_values) from file_records
),

offers as (
    -- the override patterns are matched once per distinct offer name (regexes are compiled per pair)
    select distinct provider, instance_type from records where instance_type is not null
),

matched_overrides as (
    select
        offers.provider,
        offers.instance_type,
        overrides.gpu as override_gpu,
        try_cast(overrides.gpu_count as double) as override_gpu_count,
        row_number() over (
            partition by offers.provider, offers.instance_type order by overrides.override_order
        ) as pick
    from offers
    inner join instance_overrides as overrides
        on offers.provider = overrides.provider
            and regexp_full_match(offers.instance_type, overrides.instance_type_pattern)
),

resolved as (
    select
        records.* exclude (gpu_count),
        coalesce(matched.override_gpu, aliases.gpu) as gpu,
        coalesce(matched.override_gpu_count, records.gpu_count) as gpu_count   -- GPUs per instance
    from records
    left join price_aliases as aliases on records.gpu_name = aliases.alias
    left join matched_overrides as matched
        on records.provider = matched.provider and records.instance_type = matched.instance_type
            and matched.pick = 1
),

priced as (
    -- A commitment's price is its term's parts: its usd_per_hour is the EFFECTIVE hourly price over the whole
    -- term, by the cost model's macros (sql/ddl/070_marts_cost_model.sql): term_hours = term_years x 8760,
    -- usd_per_hour = upfront_usd / term_hours + recurring_usd_per_hour (the term is paid, used or not).
    select
        resolved.* exclude (usd_per_hour),
        marts.term_hours(term_years) as term_hours,
        case when term_years is null then usd_per_hour
            else marts.commitment_usd_per_hour(upfront_usd, recurring_usd_per_hour, marts.term_hours(term_years))
        end as usd_per_hour
    from resolved
),

final as (
    select
        _row_id,
        provider,
        region,
        zone,
        instance_type,
        gpu,
        gpu_name,
        gpu_count,
        gpu_memory_gb,            -- GB per GPU
        vcpus,
        memory_gb,                -- GiB host RAM
        pricing,
        usd_per_hour,             -- USD per instance-hour
        case when gpu_count > 0 then usd_per_hour / gpu_count end as usd_per_gpu_hour,  -- USD per GPU-hour
        coalesce(currency, 'USD') as currency,
        coalesce(observed_at, $ingested_at::timestamptz) as observed_at,  -- UTC
        electricity_usd_per_kwh,  -- USD per kWh (owned GPUs)
        pue,
        term_hours,               -- h in the commitment term (null: none)
        upfront_usd,              -- USD per instance, once per term
        recurring_usd_per_hour,   -- USD per instance-hour of the term
        purchase_option,          -- commitments: how the term is paid
        offering_class,           -- AWS commitments: standard | convertible
        record_kind,              -- null = instance price; storage
        storage_type,             -- storage: volume name, e.g. gp3
        usd_per_gb_month,         -- storage: USD per GB-month
        source_line,
        rejected_reason,
        -- how far the observation is dated after the ingest (hours; negative = in the past): the file alone decides it
        epoch(coalesce(observed_at, $ingested_at::timestamptz) - $ingested_at::timestamptz) / 3600.0
            as observed_hours_ahead
    from priced
)

select * from final
