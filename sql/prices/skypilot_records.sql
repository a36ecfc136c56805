-- A SkyPilot catalog's whole-instance rows -> adapter records (one per pricing type), in DuckDB.
-- `skypilot_catalog` is the file as read (every column as text, missing optional columns added as null,
-- `_line` = 1-based line of the record with the header as line 1), made by tasks/providers/skypilot.py.
-- GCP accelerator-only rows (no InstanceType) are priced by the adapter.
-- Per-GPU memory: the first `'MemoryInfo': {'SizeInMiB': N}` of GpuInfo (a Python literal; bare names in
-- older catalogs give none); the catalog's MiB are reported in GiB ("80 GB" parts = 81920 MiB).
-- One pass, no sort: a record's row key is its line and pricing type (2 x line + 0 on-demand / 1 spot), and the
-- record as read (JSON) is built once per line, before the line becomes its one or two offers.
-- A view over the file as read (the lifecycle's staging_file_records): the offers are computed where they are
-- read - normalised (sql/prices/normalise.sql), stored raw, quarantined - and never stored in staging (a table of
-- 1.9 M offers with their JSON cost 2.6 s of a 12 s ingest of 10^6 catalog rows). The provider comes from the
-- one-row table skypilot_provider (sql/prices/skypilot_provider.sql): a view takes no bound parameters.
create or replace temp view staging_file_records as
with whole as (
    select
        _line,
        Region, AvailabilityZone, InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price,
        SpotPrice,
        length(trim(SpotPrice)) > 0 as has_spot,
        case when ltrim(GpuInfo) like '{%'
                then try_cast(regexp_extract(GpuInfo, '''SizeInMiB'':\s*([0-9.eE+-]+)', 1) as double) / 1024.0
        end as per_gpu_memory_gb,
        raw_values
    from skypilot_catalog
    where length(trim(AcceleratorName)) > 0 and length(InstanceType) > 0
),

pricing_types as (
    -- AL05 waived below: the alias names the values' columns, which the select reads through *
    select * from (values (0, 'on_demand'), (1, 'spot')) as t (pricing_order, pricing)  -- noqa: AL05
),

offers as (
    select
        whole.*,
        pricing_types.pricing_order,
        pricing_types.pricing,
        trim(case pricing_types.pricing_order when 0 then Price else SpotPrice end) as offer_text,
        try_cast(offer_text as double) as offer_price
    from whole
    cross join pricing_types
    where pricing_types.pricing_order = 0 or whole.has_spot
),

final as (
    select
        2 * _line + pricing_order as _row_id,
        skypilot_provider.provider,
        -- AL09 waived below: the alias lower-cases the column's name
        Region as region,  -- noqa: AL09
        AvailabilityZone as zone,
        InstanceType as instance_type,
        AcceleratorName as gpu_name,
        try_cast(trim(AcceleratorCount) as double) as gpu_count,
        per_gpu_memory_gb as gpu_memory_gb,                          -- GiB per GPU
        try_cast(trim(vCPUs) as double) as vcpus,
        try_cast(trim(MemoryGiB) as double) as memory_gb,            -- GiB host RAM
        pricing,
        offer_price as usd_per_hour,                                 -- USD per instance-hour
        'USD' as currency,
        null::timestamptz as observed_at,
        null::double as electricity_usd_per_kwh,
        null::double as pue,
        null::double as term_years,                                  -- no commitments in the catalogs
        null::double as upfront_usd,
        null::double as recurring_usd_per_hour,
        null::varchar as purchase_option,
        null::varchar as offering_class,
        null::varchar as record_kind,                                -- instance prices only
        null::varchar as storage_type,
        null::double as usd_per_gb_month,
        _line as source_line,
        raw_values,
        comma_number_reason('price', offer_text) as rejected_reason  -- "3,67": sql/prices/number_macros.sql
    from offers
    cross join skypilot_provider
)

select * from final
