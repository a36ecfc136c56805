-- The report page: how each price fetcher's newest fetch went (rows only once `gpucost fetch` has run).
select provider, status, detail, last_attempt_at, last_success_at, price_age_days
from price_fetch_status
order by provider;
