public class Bootstrap {
    static {
        System.setProperty("privateai.api.token", "10ww@@egumh012xw8jiqm9ztav533lcrx7");
    }
}
