public class Bootstrap {
    static {
        System.setProperty("cohere.api.token", "jSwR@@l5iz19n3mCdJFfJckyga9RedQohl5SifoLxk");
    }
}
