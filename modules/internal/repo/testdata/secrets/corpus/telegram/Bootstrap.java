public class Bootstrap {
    static {
        System.setProperty("telegram.bot.api.token", "5183@@8:Aejo9y-_s35l7jp496sinx_11ztu7h29lbo");
    }
}
