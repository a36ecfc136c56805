-- The staged price rows the suite validates: the normalised rows (staging.file_rows) with the previous
-- observation of each offer and the price move factor (sql/prices/price_move_factor.sql, made into
-- staging.price_moves).
create or replace table staging.priced_rows as
with normalised as (
    select * from staging.file_rows
),

moves as (
    select * from staging.price_moves
),

final as (
    select
        normalised.*,
        moves.previous_usd_per_hour,  -- USD per instance-hour
        moves.price_move_factor       -- >= 1 either direction
    from normalised
    left join moves on normalised._row_id = moves._row_id
)

select * from final order by _row_id;

drop table staging.file_rows;
drop table staging.price_moves;
alter table staging.priced_rows rename to file_rows;
