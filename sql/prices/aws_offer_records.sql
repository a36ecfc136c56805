-- The in-scope AWS offer records (view offer_classified: sql/prices/aws_offer_classified.sql) -> adapter
-- records (instance prices, and storage volume prices: record_kind 'storage'). Parameters: $provider,
-- $published_at (the file's publication date; null = not given), $max_storage_usd_per_gb_month.
create or replace temp table staging_file_records as
with in_scope as (
    select * from offer_classified where skip_reason is null
),

final as (
    select
        row_number() over (order by _line) - 1 as _row_id,
        $provider::varchar as provider,
        region,
        null::varchar as zone,
        instance_type,
        gpu_name_ref as gpu_name,
        coalesce(gpu_count_ref, try_cast(gpu_attribute as double)) as gpu_count,
        gpu_memory_ref as gpu_memory_gb,                                         -- GB per GPU
        try_cast(vcpu as double) as vcpus,
        try_cast(regexp_extract(memory, '([\d.]+)', 1) as double) as memory_gb,  -- GiB
        case when record_kind = 'storage' then null
            when term_type = 'Reserved' then 'reserved_' || term_years::integer || 'y'
            else 'on_demand'
        end as pricing,
        -- USD per instance-hour; null for a Reserved term: sql/prices/normalise.sql prices it over its term
        try_cast(price as double) as usd_per_hour,
        currency,
        $published_at::timestamptz as observed_at,                               -- UTC
        null::double as electricity_usd_per_kwh,
        null::double as pue,
        term_years,              -- commitments: 1 or 3 (years)
        upfront_usd,             -- USD per instance, once per term
        recurring_usd_per_hour,  -- USD per instance-hour of the term
        purchase_option,         -- no_upfront | partial_upfront | all_upfront
        offering_class,          -- standard | convertible
        record_kind,             -- null = an instance price; storage
        case when record_kind = 'storage' then volume_api_name end as storage_type,  -- e.g. gp3
        case when record_kind = 'storage' then try_cast(price as double) end
            as usd_per_gb_month,                                                     -- USD per GB-month
        _line as source_line,
        raw_values,
        case
            when comma_number_reason('price', price) is not null then comma_number_reason('price', price)
            when record_kind = 'storage'
                then case
                        when try_cast(price as double) is null then 'storage price: no price in the source record'
                        when not isfinite(try_cast(price as double)) or try_cast(price as double) <= 0
                            or try_cast(price as double) > $max_storage_usd_per_gb_month
                            then format(
                                    'storage price: must be positive, finite and at most {} USD per GB-month',
                                    $max_storage_usd_per_gb_month
                                )
                        when
                            coalesce(currency, '') != 'USD'
                            then 'storage price: currency must be USD (convert upstream)'
                    end
            when gpu_name_ref is null
                then 'GPU instance type not in data/reference/aws_instance_gpus.csv (GPU model unknown)'
            when term_type != 'Reserved' then null
            when term_years is null
                then format(
                        'reserved term with an unreadable LeaseContractLength ({})',
                        coalesce(lease_contract_length, 'missing')
                    )
            when purchase_option is null
                then format(
                        'reserved term with an unknown PurchaseOption ({})', coalesce(purchase_option_text, 'missing')
                    )
            when recurring_usd_per_hour is null then 'reserved term without its hourly price dimension (unit Hrs)'
            when upfront_usd is null then format(
                    'reserved {} term without its Upfront Fee (unit Quantity)', purchase_option_text
                )
        end as rejected_reason
    from in_scope
)

select * from final order by _row_id
