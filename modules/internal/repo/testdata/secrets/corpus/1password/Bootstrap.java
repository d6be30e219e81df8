public class Bootstrap {
    static {
        System.setProperty("1password.service.account.token", "ops_@@eyJ6P13ytOpWuGqeyWoVUAu12gu9+NR0/OJgEeXs3q+orJccyhy7fG6M2/xfiUqFqsrUSyxmycTVAYtSVtyVN7sQTKEmOzrbCqM+KbOoT8iwPU3za2qjumPwF4n3aW27Ukx1SPnXgzpCABWJi8TO4t1N6Ize/oYNj6ThpkKL0Im1nFd/a7yu/mt0gSgeKQcRZ/7RiwEoAHmBQJVVvTlpslyl6QfkF6Y87+ZSBO4ustBZis04KyLdimOQ0NsfZ");
    }
}
