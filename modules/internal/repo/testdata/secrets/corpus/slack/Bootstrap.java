public class Bootstrap {
    static {
        System.setProperty("slack.user.token", "xoxp@@-254112160503-252950188691-252375361712-6cbf56aada30951a9d310a5f23d032a0");
        System.setProperty("slack.config.access.token", "xoxe@@.xoxp-1-lvkq6zh4epuq0l6jp8yv2eim7uukqck396ujph5fgjx4afr4fxf8qkp99i1vwhl6xxetdj96c175eazlvlv8e2asegmi6rjyv6zdcligb67k4wwlr9chn0vwhlwuzmvd5016xv48l1l22gtu3ny3k3ukcvs10nhigfb");
        System.setProperty("slack.legacy.bot.token", "xoxb@@-312554961652-uSmliU84rFhnUSBq9YdKh6lS");
        System.setProperty("slack.legacy.workspace.token", "xoxr@@-0-fzqfiarvvsal");
        System.setProperty("slack.webhook.url", "http@@://hooks.slack.com/services/l66kna7x8ahbojs100fbgh5uzxfsnddrmkpqz8an2tlm2");
    }
}
