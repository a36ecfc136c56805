-- What the SkyPilot catalog holds: rows, GPU rows with no instance type (GCP accelerators, priced by the
-- adapter against host VM rows) and CPU-only rows.
select
    count(*) as catalog_rows,
    count(*) filter (where length(trim(AcceleratorName)) > 0 and coalesce(InstanceType, '') = '')
        as accelerator_rows,
    count(*) filter (where coalesce(length(trim(AcceleratorName)), 0) = 0) as cpu_only_rows
from staging_price_file
