public class Bootstrap {
    static {
        System.setProperty("stripe.access.token", "sk_p@@rod_j5pl6ijy8qftm777wrapekphert7k8w8vjoqx8x4hjrjpmub5bpdy171hxrh9e6fvwbktp3o7epv2obqyktqhll5duwkvr83rpy");
    }
}
