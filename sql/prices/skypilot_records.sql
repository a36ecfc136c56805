-- A SkyPilot catalog's whole-instance rows -> adapter records (one per pricing type), in DuckDB.
-- `skypilot_catalog` is the file as read (every column as text, missing optional columns added as null, row
-- order kept, `_line` = 1-based line of the record with the header as line 1), made by
-- tasks/prices/adapters/skypilot.py. GCP accelerator-only rows (no InstanceType) are priced by the adapter.
-- Per-GPU memory: the first `'MemoryInfo': {'SizeInMiB': N}` of GpuInfo (a Python literal; bare names in
-- older catalogs give none); the catalog's MiB are reported in GiB ("80 GB" parts = 81920 MiB).
create or replace table staging.file_records as
with catalog as (
    select * from skypilot_catalog
),

whole as materialized (
    select
        *,
        case when ltrim(GpuInfo) like '{%'
             then try_cast(regexp_extract(GpuInfo, '''SizeInMiB'':\s*([0-9.eE+-]+)', 1) as double) / 1024.0
        end as per_gpu_memory_gb
    from catalog
    where length(trim(AcceleratorName)) > 0 and length(InstanceType) > 0
),

offers as (
    select 0 as pricing_order, *, 'on_demand' as pricing, try_cast(trim(Price) as double) as offer_price
    from whole
    union all
    select 1 as pricing_order, *, 'spot' as pricing, try_cast(trim(SpotPrice) as double) as offer_price
    from whole
    where length(trim(SpotPrice)) > 0
),

final as (
    select
        row_number() over (order by pricing_order, _line) - 1 as _row_id,
        $provider::varchar                          as provider,
        Region                                      as region,
        AvailabilityZone                            as zone,
        InstanceType                                as instance_type,
        AcceleratorName                             as gpu_name,
        try_cast(trim(AcceleratorCount) as double)  as gpu_count,
        per_gpu_memory_gb                           as gpu_memory_gb,     -- GiB per GPU
        try_cast(trim(vCPUs) as double)             as vcpus,
        try_cast(trim(MemoryGiB) as double)         as memory_gb,         -- GiB host RAM
        pricing,
        offer_price                                 as usd_per_hour,      -- USD per instance-hour
        'USD'                                       as currency,
        null::timestamptz                           as observed_at,
        null::double                                as electricity_usd_per_kwh,
        null::double                                as pue,
        null::double                                as term_years,        -- no commitments in the catalogs
        null::double                                as upfront_usd,
        null::double                                as recurring_usd_per_hour,
        null::varchar                               as purchase_option,
        null::varchar                               as offering_class,
        null::varchar                               as record_kind,       -- instance prices only
        null::varchar                               as storage_type,
        null::double                                as usd_per_gb_month,
        _line                                       as source_line,
        raw_values,
        null::varchar                               as rejected_reason
    from offers
)

select * from final order by _row_id
