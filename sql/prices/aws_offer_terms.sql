-- AWS offer lines (view offer_lines, both forms) with every Reserved term's price dimensions paired into ONE
-- record, so that a term is classified and counted once however many dimensions it has. A Reserved term is
-- one SKU and offer term code (`LeaseContractLength` 1yr / 3yr, `PurchaseOption` No / Partial / All Upfront,
-- `OfferingClass` standard / convertible) with an hourly dimension (unit Hrs; 0 for All Upfront) and, unless
-- No Upfront, an "Upfront Fee" (unit Quantity: USD once per instance). The paired record takes the first
-- dimension's line and keeps every dimension's record as a JSON array; `recurring` and `upfront` are the two
-- prices as text. Other lines pass unchanged (recurring, upfront null).
create or replace temp view offer_terms as
with lines as (
    select * from offer_lines
),

not_reserved as (
    select *, null::varchar as recurring, null::varchar as upfront
    from lines
    where coalesce(term_type, '') != 'Reserved'
),

reserved as (
    select
        min(_line) as _line,
        sku,
        offer_term_code,
        'Reserved' as term_type,
        'term' as unit,
        null::varchar as price,
        any_value(currency) as currency,
        any_value(product_family) as product_family,
        any_value(instance_type) as instance_type,
        any_value(tenancy) as tenancy,
        any_value(operating_system) as operating_system,
        any_value(pre_installed_sw) as pre_installed_sw,
        any_value(capacity_status) as capacity_status,
        any_value(region) as region,
        any_value(gpu_attribute) as gpu_attribute,
        any_value(vcpu) as vcpu,
        any_value(memory) as memory,
        any_value(lease_contract_length) as lease_contract_length,
        any_value(purchase_option_text) as purchase_option_text,
        any_value(offering_class_text) as offering_class_text,
        any_value(volume_api_name) as volume_api_name,
        -- null for lines that are no GPU instance (their JSON is not built): skipped anyway
        '[' || string_agg(raw_values::varchar, ',' order by _line) || ']' as raw_values,
        max(price) filter (where unit = 'Hrs') as recurring,    -- USD per instance-hour, as text
        max(price) filter (where unit = 'Quantity') as upfront  -- USD per instance, once, as text
    from lines
    where term_type = 'Reserved'
    group by sku, offer_term_code
),

combined as (
    select * from not_reserved
    union all by name
    select * from reserved
),

final as (
    select
        *,
        try_cast(nullif(regexp_extract(lease_contract_length, '^\s*(\d+)\s*yr\s*$', 1), '') as double)
            as term_years,
        case purchase_option_text
            when 'No Upfront' then 'no_upfront'
            when 'Partial Upfront' then 'partial_upfront'
            when 'All Upfront' then 'all_upfront'
        end as purchase_option,
        lower(trim(offering_class_text)) as offering_class,
        try_cast(recurring as double) as recurring_usd_per_hour,  -- USD per instance-hour
        -- No Upfront terms have no fee dimension: their upfront part is 0
        case when purchase_option_text = 'No Upfront' then coalesce(try_cast(upfront as double), 0.0)
            else try_cast(upfront as double)
        end as upfront_usd                                        -- USD per instance
    from combined
)

select * from final
