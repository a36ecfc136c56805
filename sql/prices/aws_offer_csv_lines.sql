-- An AWS Price List offer CSV (after its 5-line preamble) as the offer lines sql/prices/aws_offer_records.sql
-- classifies: the columns the adapter reads, named after the JSON form's attributes, in file order (`_order`),
-- and the record as JSON for GPU instance rows (rows with a GPU attribute, or an instance type in
-- data/reference/aws_instance_gpus.csv) and storage volume prices only: the other records are skipped, and a
-- multi-GB file's JSON is not built.
-- Streams: a projection of the file, no join, so row order and bounded memory are kept.
create or replace temp table staging_price_file as
select
    "SKU" as sku,
    "OfferTermCode" as offer_term_code,
    "TermType" as term_type,
    "Unit" as unit,
    "PricePerUnit" as price,
    "Currency" as currency,
    "Product Family" as product_family,
    "Instance Type" as instance_type,
    "Tenancy" as tenancy,
    "Operating System" as operating_system,
    "Pre Installed S/W" as pre_installed_sw,
    "CapacityStatus" as capacity_status,
    "Region Code" as region,
    "GPU" as gpu_attribute,
    "vCPU" as vcpu,
    "Memory" as memory,
    "LeaseContractLength" as lease_contract_length,
    "PurchaseOption" as purchase_option_text,
    "OfferingClass" as offering_class_text,
    "Volume API Name" as volume_api_name,
    case when try_cast("GPU" as double) > 0 or "Instance Type" in (select instance_type from aws_gpu_shapes)
            or ("Product Family" = 'Storage' and "Unit" = 'GB-Mo')
            then to_json(offer)
    end as raw_values
from read_csv(
        $path, skip = 5, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"',
        allow_quoted_nulls = false, strict_mode = true, null_padding = false
    ) as offer
