select * from marts.price_fetch_status order by provider;
