-- Every Reserved term of an AWS offer file (view offer_terms: sql/prices/aws_offer_terms.sql), in scope or
-- not, as adapter records with its term's parts: to inspect or check the term arithmetic on files whose terms
-- the ranking skips (e.g. the CPU instances of the bundled offer CSV). The GPU count is 1 where the file names
-- no GPU (usd_per_gpu_hour then equals usd_per_hour). Parameters: $provider.
with terms as (
    select * from offer_terms where term_type = 'Reserved'
),

final as (
    select
        row_number() over (order by _line) - 1 as _row_id,
        $provider::varchar as provider,
        region,
        instance_type,
        coalesce(try_cast(gpu_attribute as double), 1.0) as gpu_count,
        'reserved_' || cast(term_years as integer) || 'y' as pricing,
        term_years,
        upfront_usd,             -- USD per instance, once per term
        recurring_usd_per_hour,  -- USD per instance-hour of the term
        purchase_option,
        offering_class,
        operating_system,
        _line as source_line
    from terms
)

select * from final order by _row_id
