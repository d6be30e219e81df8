public class Bootstrap {
    static {
        System.setProperty("telegram.bot.api.token", "1467@@825503914680:Apwa5faz13yk-o8psn4l3a5n9vcq1zmlpyv");
    }
}
