/** The files a run writes in each `<model>/<variant>` directory (names only: importing them loads nothing else). */

/** one line per finished episode, appended as the run goes (resumable) */
export const GEN_RES_JSONL = "gen_res.jsonl"
/** the finished run in eval.py's layout, for ShieldAgent and other tools */
export const GEN_RES_JSON = "gen_res.json"
/** ShieldAgent's label per episode */
export const SHIELD_JSONL = "shield.jsonl"

/** beside a run merged from shards: the shards and their audit files (`vetobench merge`) */
export const SHARDS_JSON = "shards.json"
