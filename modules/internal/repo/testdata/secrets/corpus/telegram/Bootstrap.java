public class Bootstrap {
    static {
        System.setProperty("telegram.bot.api.token", "8406@@8:Ak60bd5l3w9xjnxl5nzrjri10ebnzsslg00");
    }
}
