-- AWS offer records (both forms: staging_price_file from the CSV, or the JSON form's price dimensions; a
-- Reserved term's dimensions paired into one record), classified. In scope: Linux, Shared tenancy, an
-- OnDemand hourly price or a Reserved term, no pre-installed software, capacity status Used, USD, and an
-- instance with a GPU. Every other record gets the FIRST rule it breaks (a rule that cannot be evaluated
-- counts as broken), so the skip counts add up to the records read.
-- `offer_terms` (view, sql/prices/aws_offer_terms.sql): the records with `_line` (1-based line, or record
-- index in the JSON form).
-- `aws_gpu_shapes`: data/reference/aws_instance_gpus.csv (sql/prices/aws_gpu_instances.sql).
create or replace temp view offer_classified as
with lines as (
    select * from offer_terms
),

shapes as (
    select * from aws_gpu_shapes
),

kinds as (
    -- a storage volume's price per GB-month (e.g. EBS gp3): a storage record, for checkpoint storage
    select
        *,
        case when product_family = 'Storage' and term_type = 'OnDemand' and unit = 'GB-Mo'
                and trim(coalesce(volume_api_name, '')) != ''
                then 'storage'
        end as record_kind
    from lines
),

classified as (
    select
        kinds.*,
        case
            when kinds.record_kind = 'storage' then null
            when not coalesce(starts_with(kinds.product_family, 'Compute Instance'), false)
                then 'not a compute instance (storage, data transfer, ...)'
            when coalesce(kinds.term_type not in ('OnDemand', 'Reserved'), true)
                then 'neither on-demand nor a reserved term'
            when kinds.term_type = 'OnDemand' and coalesce(kinds.unit != 'Hrs', true)
                then 'not an hourly price (upfront fee or other unit)'
            when coalesce(kinds.operating_system != 'Linux', true)
                then 'operating system not Linux (Windows, RHEL, SUSE, Ubuntu Pro, ...)'
            when coalesce(kinds.tenancy != 'Shared', true) then 'tenancy not Shared (Dedicated or Host)'
            when coalesce(trim(kinds.pre_installed_sw) != '' and kinds.pre_installed_sw != 'NA', false)
                then 'pre-installed software (e.g. SQL Server)'
            when coalesce(kinds.capacity_status != 'Used', true) then 'capacity status not Used (capacity reservations)'
            when coalesce(kinds.currency != 'USD', true) then 'not priced in USD'
        end as rule_broken
    from kinds
),

with_shapes as (
    select
        classified.*,
        shapes.gpu_name as gpu_name_ref,
        try_cast(shapes.gpu_count as double) as gpu_count_ref,
        try_cast(shapes.gpu_memory_gb as double) as gpu_memory_ref,
        coalesce(classified.rule_broken, case
            when record_kind is null and shapes.gpu_name is null
                and not coalesce(try_cast(gpu_attribute as double) > 0, false)
                then 'no GPU (instance type not in data/reference/aws_instance_gpus.csv and no GPU count in the record)'
        end) as skip_reason
    from classified
    left join shapes on classified.instance_type = shapes.instance_type
)

select * from with_shapes
