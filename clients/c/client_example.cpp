/*
 * client_example.cpp: libikdclient from C++ (an Unreal or any other C++
 * game server): <ikd/client.h> is a C header that compiles as C++, its
 * callback a captureless lambda. A small wrapper owns the connection
 * (RAII) and runs it from the program's loop; the example streams a foot
 * along a step and checks each answer by its geometry, then solves one
 * target with the blocking helper. The URL is the first argument (default
 * http://127.0.0.1:8080). Prints "all checks passed" and exits 0, or
 * "FAILED: ..." and 1.
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <ikd/client.h>

namespace
{

const char *const kLeg =
    "{\"kind\":\"bones\",\"positions\":[[0.0,0.0,1.0],[0.1,0.0,0.55],[0.0,0.0,0.1]]}";

struct Vec3 {
    double x, y, z;
};

double dist(const double *a, const Vec3 &b)
{
    return std::sqrt((a[0] - b.x) * (a[0] - b.x) + (a[1] - b.y) * (a[1] - b.y) +
                     (a[2] - b.z) * (a[2] - b.z));
}

// The connection, freed with its owner.
class Streamer
{
  public:
    explicit Streamer(const std::string &url)
    {
        ikd_conn_opts o{};
        o.url = url.c_str();
        o.token = std::getenv("IKD_TOKEN");
        o.user = this;
        o.on_event = [](ikd_conn *, const ikd_event *ev, void *user) {
            static_cast<Streamer *>(user)->onEvent(*ev);
        };
        ikd_error err;
        conn_.reset(ikd_conn_new(&o, &err));
        if (!conn_)
            error_ = err.message;
    }
    bool ok() const
    {
        return conn_ != nullptr && error_.empty();
    }
    const std::string &error() const
    {
        return error_;
    }
    ikd_conn *get()
    {
        return conn_.get();
    }
    // One turn of the program's loop.
    void pump(int timeout_ms)
    {
        if (ikd_conn_poll(conn_.get(), timeout_ms) < 0 && error_.empty())
            error_ = "the connection closed";
    }
    int opened = 0;
    std::vector<Vec3> feet; // the answered foot positions, in order
    long long lastSeq = 0;

  private:
    void onEvent(const ikd_event &ev)
    {
        if (ev.kind == IKD_EV_OPENED)
            opened++;
        else if (ev.kind == IKD_EV_SOLUTION && ev.result->position_count == 3) {
            const double *foot = ev.result->positions + 6;
            feet.push_back({foot[0], foot[1], foot[2]});
            lastSeq = ev.seq;
        } else if (ev.kind == IKD_EV_ERROR || ev.kind == IKD_EV_DISCONNECTED)
            error_ = ev.error->message;
    }
    struct Free {
        void operator()(ikd_conn *c) const
        {
            ikd_conn_free(c);
        }
    };
    std::unique_ptr<ikd_conn, Free> conn_;
    std::string error_;
};

} // namespace

int main(int argc, char **argv)
{
    std::string url = argc > 1 ? argv[1] : "http://127.0.0.1:8080";
    Streamer s(url);
    if (!s.ok()) {
        std::printf("FAILED: %s\n", s.error().c_str());
        return 1;
    }
    ikd_chain leg{};
    leg.json = kLeg;
    ikd_error err;
    if (ikd_stream_open(s.get(), "foot", &leg, nullptr, nullptr, &err) != IKD_OK) {
        std::printf("FAILED: open: %s\n", err.message);
        return 1;
    }
    std::vector<Vec3> step;
    for (int i = 0; i < 20; i++)
        step.push_back({0.15 * std::sin(0.2 * i), 0.1, 0.25 + 0.05 * std::cos(0.2 * i)});
    int failures = 0;
    size_t next = 0;
    for (int turns = 0; s.ok() && s.feet.size() < step.size() && turns < 10000; turns++) {
        if (s.opened && next == s.feet.size() && next < step.size()) {
            ikd_target t{};
            t.position[0] = step[next].x;
            t.position[1] = step[next].y;
            t.position[2] = step[next].z;
            if (ikd_stream_target(s.get(), "foot", IKD_SEQ_AUTO, &t, nullptr, nullptr, &err))
                break;
            next++;
        }
        s.pump(100);
    }
    if (!s.ok() || s.feet.size() != step.size()) {
        std::printf("FAILED: %zu of %zu answers (%s)\n", s.feet.size(), step.size(),
                    s.error().c_str());
        return 1;
    }
    for (size_t i = 0; i < step.size(); i++) {
        const double foot[3] = {s.feet[i].x, s.feet[i].y, s.feet[i].z};
        if (dist(foot, step[i]) > 1e-9) {
            std::printf("FAILED: answer %zu is not on its target\n", i);
            failures++;
        }
    }
    std::printf("c++: %zu targets streamed, every foot on its target\n", s.feet.size());
    // the blocking helper, as a script would use it
    ikd_target last{};
    last.position[0] = 0.2;
    last.position[1] = 0.1;
    last.position[2] = 0.25;
    ikd_result *r = nullptr;
    if (ikd_stream_solve(s.get(), "foot", &last, nullptr, 5000, &r, &err) != IKD_OK) {
        std::printf("FAILED: ikd_stream_solve: %s\n", err.message);
        return 1;
    }
    if (dist(r->positions + 6, Vec3{0.2, 0.1, 0.25}) > 1e-9) {
        std::printf("FAILED: the blocking solve is not on its target\n");
        failures++;
    }
    ikd_result_free(r);
    if (failures)
        return 1;
    std::printf("all checks passed\n");
    return 0;
}
