#include "StudyCommand.h"

#include "RunCommands.h"
#include "StopOnSignals.h"
#include "TextTable.h"
#include "study/BuiltinStudies.h"
#include "study/StudyComparisons.h"
#include "study/StudyLayout.h"
#include "study/StudyRunner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace widelab {
namespace {

const char* kStudyUsage =
    "usage: widelab-cli study STUDY.json|BUILTIN --out STUDY_DIR [--steps N] [--seeds N] [--jobs N] [--device D] [--threads N]\n"
    "       widelab-cli study --out STUDY_DIR [--jobs N] [--device D] [--threads N]   (continue a study)\n"
    "       widelab-cli study --report STUDY_DIR\n"
    "       widelab-cli study --list";

double seconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string percent(const std::map<std::string, double>& measures, const std::string& key)
{
    const auto it = measures.find(key);
    if (it == measures.end())
        return "-";
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << 100.0 * it->second << "%";
    return text.str();
}

// The study's progress on stderr: a line that rewrites itself on a terminal, a
// line every few seconds otherwise, and a line for each member's start and end.
class StudyProgressLine : public StudyObserver {
public:
    StudyProgressLine(std::ostream& err, bool terminal, const std::vector<StudyMember>& members)
        : m_err(err), m_terminal(terminal), m_members(members)
    {
    }

    void onMemberStarted(std::size_t index, const StudyMember& member, bool resumed) override
    {
        line("member " + std::to_string(index + 1) + "/" + std::to_string(m_members.size()) + " " + member.name
             + (resumed ? ": continuing from its checkpoint" : ": started"));
    }
    void onMemberSkipped(std::size_t, const MemberResult& result) override
    {
        ++m_skipped;
        (void)result;
    }
    void onMemberProgress(std::size_t index, const TrainingSnapshot& s, std::int64_t total) override
    {
        std::ostringstream text;
        text << m_members[index].name << " step " << s.step << "/" << total << std::fixed << std::setprecision(4)
             << "  loss " << s.loss << std::setprecision(1) << "  acc " << 100.0 * s.accuracy << "%";
        m_member = text.str();
        status(false);
    }
    void onMemberMessage(std::size_t index, const std::string& level, const std::string& text) override
    {
        // A warning of the study's base (train.warmup_steps exceeds --steps, say)
        // comes from every member: said once.
        if (level == "error" || (level == "warning" && m_warned.insert(text).second))
            line(level + " (" + m_members[index].name + "): " + text);
    }
    void onMemberFinished(std::size_t, const MemberResult& r) override
    {
        if (r.status == MemberStatus::Completed) {
            const auto wall = r.measures.find("wall_s");
            // A translation member is scored in BLEU, which its results table reports.
            const auto bleu = r.measures.find("test_bleu");
            std::ostringstream scored;
            if (bleu != r.measures.end())
                scored << std::fixed << std::setprecision(2) << "test BLEU at best.pt " << bleu->second;
            else
                scored << "best validation accuracy " << percent(r.measures, "best_val_accuracy")
                       << ", test accuracy at best.pt " << percent(r.measures, "test_accuracy");
            line(r.name + " completed: " + scored.str()
                 + (wall != r.measures.end() ? ", " + durationText(wall->second) : ""));
        } else {
            line(r.name + " failed: " + r.error);
        }
        m_member.clear();
        m_memberEnded = true;
    }
    void onMemberStopped(std::size_t index, std::int64_t step) override
    {
        line(m_members[index].name + " stopped at step " + std::to_string(step) + "; its checkpoint is saved");
    }
    void onProgress(const StudyProgress& p) override
    {
        std::ostringstream text;
        text << "study: " << p.done << "/" << p.total << " done";
        if (p.failed > 0)
            text << " (" << p.failed << " failed)";
        text << ", " << p.running << " running, " << p.left << " left";
        if (p.secondsLeft >= 0.0)
            text << ", about " << durationText(p.secondsLeft) << " left";
        m_study = text.str();
        status(m_memberEnded || !m_started);  // the study's line after every member, unthrottled
        m_memberEnded = false;
        m_started = true;
    }
    void finish()
    {
        if (m_terminal && m_shown)
            m_err << "\n" << std::flush;
        m_shown = false;
    }
    std::size_t skipped() const { return m_skipped; }

private:
    void line(const std::string& text)
    {
        if (m_terminal && m_shown)
            m_err << "\r" << std::string(m_width, ' ') << "\r";
        m_shown = false;
        m_err << text << "\n" << std::flush;
        if (m_terminal)
            status(true);  // redrawn below the line
    }
    // The study's line and the running member's; throttled unless `now`.
    void status(bool now)
    {
        const double t = seconds();
        if (!now && t - m_lastStatus < (m_terminal ? 0.25 : 10.0))
            return;
        m_lastStatus = t;
        const std::string text = m_study + (m_member.empty() ? "" : " | " + m_member);
        if (m_terminal) {
            m_err << "\r" << text << std::string(m_width > text.size() ? m_width - text.size() : 0, ' ') << std::flush;
            m_width = text.size();
            m_shown = true;
        } else {
            m_err << text << "\n" << std::flush;
        }
    }

    std::ostream& m_err;
    bool m_terminal;
    const std::vector<StudyMember>& m_members;
    std::string m_study, m_member;
    std::size_t m_width = 0, m_skipped = 0;
    double m_lastStatus = 0.0;
    bool m_shown = false;
    bool m_memberEnded = false, m_started = false;
    std::set<std::string> m_warned;
};

int listStudiesCommand(std::ostream& out, std::ostream& err)
{
    TextTable table({"study", "members", "name"});
    for (const std::string& name : listStudies()) {
        try {
            const StudyDocument study = loadStudyDocument(resolveStudyPath(name));
            table.addRow({name, std::to_string(expandStudy(study).size()), study.name});
        } catch (const std::exception& error) {
            err << name << ": " << error.what() << "\n";
            table.addRow({name, "-", "(does not validate)"});
        }
    }
    out << table.render();
    return 0;
}

}  // namespace

int studyCommand(const StudyArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.list) {
        if (!a.positional.empty() || !a.out.empty() || !a.report.empty())
            throw RunUsageError(kStudyUsage);
        return listStudiesCommand(out, err);
    }
    if (!a.report.empty()) {
        if (!a.positional.empty() || !a.out.empty())
            throw RunUsageError(kStudyUsage);
        const StudyRecord record = readStudyRecord(a.report);
        out << studyReport(record, readStudyResults(a.report, record));
        return 0;
    }
    if (a.out.empty() || a.positional.size() > 1)
        throw RunUsageError(kStudyUsage);
    // Without a document, the study continues as STUDY_DIR/study.json records it.
    const StudyDocument study =
        a.positional.empty() ? recordedStudy(a.out) : loadStudyDocument(resolveStudyPath(a.positional.front()));
    StudyOptions options;
    if (a.steps > 0)
        options.overrides.steps = a.steps;
    if (a.seeds > 0)
        options.overrides.seeds = a.seeds;
    options.jobs = static_cast<std::size_t>(std::max<std::int64_t>(1, a.jobs));
    if (!a.device.empty())
        options.device = a.device;
    if (a.threads >= 0)
        options.threads = a.threads;
    StudyRunner runner(study, a.out, options);

    const bool terminal = &err == &std::cerr && isatty(STDERR_FILENO);
    StudyProgressLine progress(err, terminal, runner.members());
    runner.addObserver(&progress);
    const auto overrides = runner.overrides();
    err << "study " << (study.name.empty() ? a.out : "\"" + study.name + "\"") << ": " << runner.members().size()
        << " members into " << a.out;
    if (overrides.steps)
        err << ", " << *overrides.steps << " steps each";
    if (overrides.seeds)
        err << ", " << *overrides.seeds << " seed(s)";
    err << "\n";

    StopOnSignals signals;
    const StudySummary summary = runner.run(StopOnSignals::flag());
    progress.finish();
    if (progress.skipped() > 0)
        err << progress.skipped() << " member(s) finished before were passed over\n";
    if (summary.stopped) {
        err << "study stopped: " << summary.completed + summary.failed << " of " << summary.total
            << " members done; run the same command again (or widelab-cli study --out " << a.out << ") to continue\n";
        return 0;
    }
    const StudyRecord record = readStudyRecord(a.out);
    out << studyReport(record, readStudyResults(a.out, record));
    err << "results in " << studylayout::resultsFile(a.out).string() << " and " << studylayout::reportFile(a.out).string()
        << "\n";
    if (summary.failed > 0) {
        err << summary.failed << " of " << summary.total << " members failed (see the table's error column)\n";
        return 1;
    }
    return 0;
}

}  // namespace widelab
