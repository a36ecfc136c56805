-- The staged price rows the suite validates: the normalised rows (staging_file_rows) with the previous
-- observation of each offer and the price move factor (sql/prices/price_move_factor.sql, made into
-- staging_price_moves, which holds only the rows that have a previous price: the others stay null).
alter table staging_file_rows add column previous_usd_per_hour double;  -- USD per instance-hour
alter table staging_file_rows add column price_move_factor double;      -- >= 1 either direction

update staging_file_rows as staged
set previous_usd_per_hour = moves.previous_usd_per_hour, price_move_factor = moves.price_move_factor
from staging_price_moves as moves
where staged._row_id = moves._row_id;

drop table staging_price_moves;
