public class Bootstrap {
    static {
        System.setProperty("slack.user.token", "xoxp@@-4614724432022-4621207627011-5182682871568-1ddad9823e8528ad0f4944dfa3c6fc6c");
        System.setProperty("slack.config.access.token", "xoxe@@.xoxb-1-Mi0yLTMxNzcwMjQ0MTcxMy0zNjU5NDY0Njg4MTctNTE1ODE1MjY5MTcxNC01MTU4MDI0MTgyOTc5LWRmY2YwY2U4ODhhNzY5ZGU5MTAyNDU4MDJjMGQ0ZDliMTZhMjNkMmEyYzliNjkzMDRlN2VjZTI4MWNiMzRkNGQ");
        System.setProperty("slack.legacy.bot.token", "xoxb@@-51351043345-Lzwmto5IMVb8UK36MghZYMEi");
        System.setProperty("slack.legacy.workspace.token", "xoxr@@-1xhkaqsfm2pv");
        System.setProperty("slack.webhook.url", "http@@s://hooks.slack.com/services/e8qdv4sn6gbzlv2xbdujkah85hopo63gle380jpyaubmmf");
    }
}
