-- Store floor (SkyPilot catalog): the typed offers, one per pricing type (on-demand; spot where the line has a
-- spot price: about 1.9 offers per line), with lineage (the landed file's sha256, the 1-based line, header = 1),
-- inserted from the file as read (bench/sql/store_floor_read_csv.sql; its rowid is the record's place in the file,
-- from a large base inside a transaction, hence the minimum subtracted). No alias lookup, no quarantine, no price
-- move, no history, no checks: the least any ingest of the catalog into core.price_observations does.
insert into floor_offers
with lines as (
    select *, rowid - (select min(rowid) from floor_file) + 2 as line
    from floor_file
)

select
    'aws', Region, AvailabilityZone, InstanceType, AcceleratorName, AcceleratorName, AcceleratorCount, vCPUs,
    MemoryGiB, case pricing_order when 0 then 'on_demand' else 'spot' end,
    case pricing_order when 0 then Price else SpotPrice end,
    case pricing_order when 0 then Price else SpotPrice end / AcceleratorCount,
    'USD', $ingested_at, $path, line, $sha256, $ingested_at
from lines
cross join (values (0), (1)) as pricing (pricing_order)
where
    AcceleratorName is not null
    and (pricing_order = 0 and Price is not null or pricing_order = 1 and SpotPrice is not null)
