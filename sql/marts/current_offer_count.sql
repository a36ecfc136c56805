-- How many current offers there are (sizes the ranking's batches of workloads).
select count(*) as offers from core.prices_current;
