-- The temp tables a night's ranking builds (ranking_offers.sql .. ranking_key_ranks.sql), once its rows are written.
drop table if exists ranking_offers;
drop table if exists ranking_candidates;
drop table if exists ranking_ladder;
drop table if exists ranking_rungs;
drop table if exists ranking_terms;
drop table if exists ranking_picked;
drop table if exists ranking_keys;
drop table if exists ranking_key_ranks;
