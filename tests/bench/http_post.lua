-- wrk script for tests/bench/http_bench.sh: POST one two-bone solve (seed
-- 001: a three-joint limb as bone positions, a reachable position target).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"chain":{"kind":"bones","positions":[[0,0,0],[0,0.5,0],[0,1.0,0]]},' ..
           '"target":{"position":[0.3,0.6,0.2]}}'
