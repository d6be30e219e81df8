public class Bootstrap {
    static {
        System.setProperty("cohere.api.token", "zQXq@@1w0tlXAOzdapQtNo4J2run5IyNmUkWDjp874");
    }
}
