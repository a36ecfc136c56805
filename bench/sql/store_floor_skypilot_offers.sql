-- Store floor (SkyPilot catalog), step 3: the typed offers, one per pricing type (the shape of core.price_observations,
-- with no alias lookup, no price move and no checks).
create table floor_offers as
select
    'aws' as provider, Region as region, AvailabilityZone as zone, InstanceType as instance_type,
    AcceleratorName as gpu, try_cast(AcceleratorCount as double) as gpu_count, try_cast(vCPUs as double) as vcpus,
    try_cast(MemoryGiB as double) as memory_gb, case pricing_order when 0 then 'on_demand' else 'spot' end as pricing,
    try_cast(case pricing_order when 0 then Price else SpotPrice end as double) as usd_per_hour,
    try_cast(case pricing_order when 0 then Price else SpotPrice end as double)
        / try_cast(AcceleratorCount as double) as usd_per_gpu_hour,
    'USD' as currency, now() as observed_at, $path as source_file, rowid + 2 as source_line,
    'sha' as content_sha256, now() as ingested_at
from floor_file
cross join (values (0), (1)) as pricing (pricing_order)
where length(AcceleratorName) > 0 and (pricing_order = 0 or length(SpotPrice) > 0)
