public class Bootstrap {
    static {
        System.setProperty("slack.user.token", "xoxp@@-11873098179-111402824422-234336993777-b96c9fb3b69f82ebb79d12f280779de1");
        System.setProperty("slack.config.access.token", "xoxe@@.xoxp-1-Mi0yLTMxNzcwMjQ0MTcxMy0zNjU5NDY0Njg4MTctNTE1ODE1MjY5MTcxNC01MTU4MDI0MTgyOTc5LWRmY2YwY2U4ODhhNzY5ZGU5MTAyNDU4MDJjMGQ0ZDliMTZhMjNkMmEyYzliNjkzMDRlN2VjZTI4MWNiMzRkNGQ");
        System.setProperty("slack.legacy.bot.token", "xoxb@@-123456789012-Xw937qtWSXJss1lFaKe");
        System.setProperty("slack.legacy.workspace.token", "xoxa@@-xxlxiy9iq3m8");
        System.setProperty("slack.webhook.url", "hook@@s.slack.com/services/ultmg76vn9cu2va7ydj1pff3eq2i1umfs5t3z2it55u3");
        System.setProperty("slack.webhook.url", "http@@s://hooks.slack.com/triggers/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");
    }
}
