-- A recall search ranks the matches among the 10,000 newest artifacts past
-- its cursor, read by artifacts_by_project; no statement reads the words'
-- index any more. Its entries spanned every tenant, and every remember
-- wrote one per distinct word.
DROP INDEX IF EXISTS artifacts_search;
