public class Bootstrap {
    static {
        System.setProperty("messagebird.api.token", "wqm7@@wtzdmsohbj648vr4w0it7");
    }
}
