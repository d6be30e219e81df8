public class Bootstrap {
    static {
        System.setProperty("slack.user.token", "xoxp@@-11873098179-111402824422-234336993777-b96c9fb3b69f82ebb79d12f280779de1");
        System.setProperty("slack.config.access.token", "xoxe@@.xoxp-1-Mi0yLTMxNzcwMjQ0MTcxMy0zNjU5NDY0Njg4MTctNTE1ODE1MjY5MTcxNC01MTU4MDI0MTgyOTc5LWRmY2YwY2U4ODhhNzY5ZGU5MTAyNDU4MDJjMGQ0ZDliMTZhMjNkMmEyYzliNjkzMDRlN2VjZTI4MWNiMzRkNGQ");
        System.setProperty("slack.legacy.bot.token", "xoxb@@-123456789012-Xw937qtWSXJss1lFaKe");
        System.setProperty("slack.legacy.workspace.token", "xoxa@@-1emcf70nfrqx");
        System.setProperty("slack.webhook.url", "hook@@s.slack.com/services/sl93be143oluyi1byw7nmj9a0m849ui4zrpe4rh2t74w");
        System.setProperty("slack.webhook.url", "http@@s://hooks.slack.com/triggers/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");
    }
}
