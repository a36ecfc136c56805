-- Store floor (SkyPilot catalog), step 2: one raw record (the line as JSON) per offer, as the ingest keeps it:
-- the on-demand price of every GPU row and the spot price where the catalog has one.
insert into floor_raw
select 'sha', $path, rowid + 2, 'aws', 'skypilot', to_json(floor_file)
from floor_file
cross join (values (0), (1)) as pricing (pricing_order)
where length(AcceleratorName) > 0 and (pricing_order = 0 or length(SpotPrice) > 0)
