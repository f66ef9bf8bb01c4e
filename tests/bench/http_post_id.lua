-- wrk script: POST one two-bone solve by chain id (the id of a chain
-- registered before, in IKD_CHAIN_ID: tests/bench/balancer_bench.sh,
-- tests/server/test_balancer.py's rolling restart).
local id = os.getenv("IKD_CHAIN_ID")
assert(id and #id == 32, "IKD_CHAIN_ID must hold a chain id")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"chain_id":"' .. id .. '","target":{"position":[0.3,0.6,0.2]}}'
